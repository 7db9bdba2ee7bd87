package benchlab

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rdmaform/rdmaform/internal/testlab/kubelab"
)

// StartKube starts kubelab's real kube-apiserver and etcd for a program
// rather than a test; stop ends both by their PIDs and removes the lab's
// directory. log receives what the lab would log to a test.
func StartKube(log io.Writer) (lab *kubelab.Lab, stop func(), err error) {
	tb := &programTB{log: log}
	done := make(chan struct{})
	go func() {
		defer close(done)
		lab = kubelab.Start(tb)
	}()
	<-done
	if tb.stopped != "" {
		tb.cleanup()
		return nil, nil, fmt.Errorf("%s", tb.stopped)
	}
	return lab, tb.cleanup, nil
}

// FreePort is a loopback port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Proc is a program started by Start, running until Stop.
type Proc = kubelab.Proc

// Start starts argv with env, its output in the file logFile; the
// process gets SIGKILL if this one dies first (kubelab.StartProc).
func Start(argv, env []string, logFile string) (*Proc, error) {
	return kubelab.StartProc(argv, env, logFile)
}

// Usage is a process's memory and CPU time at one moment.
type Usage struct {
	RSS  int64 // resident set size, bytes (VmRSS)
	Peak int64 // peak resident set size, bytes (VmHWM)
	CPU  time.Duration
}

// ProcUsage reads /proc/PID/status (VmRSS, VmHWM) and /proc/PID/stat
// (utime + stime, in clock ticks of 1/100 s); pid 0 is this process.
//
// Equivalent to: grep -E 'VmRSS|VmHWM' /proc/PID/status; cut -d' ' -f14,15 /proc/PID/stat
func ProcUsage(pid int) (Usage, error) {
	p := "self"
	if pid != 0 {
		p = strconv.Itoa(pid)
	}
	var u Usage
	b, err := os.ReadFile("/proc/" + p + "/status")
	if err != nil {
		return u, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return u, fmt.Errorf("/proc/%s/status: %s: %w", p, k, err)
		}
		switch k {
		case "VmRSS":
			u.RSS = n * 1024
		case "VmHWM":
			u.Peak = n * 1024
		}
	}
	b, err = os.ReadFile("/proc/" + p + "/stat")
	if err != nil {
		return u, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after the last ")" start at field 3 (state).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return u, fmt.Errorf("/proc/%s/stat: no command name", p)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return u, fmt.Errorf("/proc/%s/stat: %d fields", p, len(f)+2)
	}
	var ticks int64
	for _, s := range f[11:13] { // fields 14 (utime) and 15 (stime)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return u, fmt.Errorf("/proc/%s/stat: %w", p, err)
		}
		ticks += n
	}
	// USER_HZ is 100 on every Linux architecture rdmaform builds for.
	u.CPU = time.Duration(ticks) * 10 * time.Millisecond
	return u, nil
}
