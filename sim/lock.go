package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
	"gopkg.in/yaml.v3"
)

// LockFile, in a simulated host's directory, is where the processes that
// use the host take turns with its state: plans, shows and audits beside
// an apply, or several applies, each hold their own copy of sim.yaml.
//
// Every look at or change of the state (a tool run, a netlink call, a
// configfs mkdir, a write of sysfs) holds an exclusive flock(2) on it and
// first reloads sim.yaml when another process saved it since this one
// last read or wrote it, so a change is made to the newest state and no
// process saves over another's change. Reads of the rendered tree need no
// lock: the tree is rendered file by file with renames (see sync), so a
// reader sees each file whole, old or new, as it would on a kernel.
//
// A process keeps the lock between a firmware set and the save that
// firmware sets share (leaveFirmware): until then its state holds a
// change sim.yaml does not, which a reload would lose.
const LockFile = ".sim.lock"

// fileID identifies one version of sim.yaml: it is replaced by a rename
// on every save, so the inode changes with it.
type fileID struct {
	ino, size uint64
	mtime     int64
}

func statID(p string) (fileID, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return fileID{}, err
	}
	id := fileID{size: uint64(fi.Size()), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.ino = st.Ino
	}
	return id, nil
}

// openLock opens (creating) the host's lock file.
func (s *Sim) openLock() error {
	f, err := os.OpenFile(filepath.Join(s.Dir, LockFile), os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("simulated host %s: %w", s.Dir, err)
	}
	s.lockf = f
	return nil
}

// lock is s.mu and the host's lock, with the state brought up to date.
func (s *Sim) lock() {
	s.mu.Lock()
	s.hold()
}

// unlock undoes lock.
func (s *Sim) unlock() {
	s.release()
	s.mu.Unlock()
}

// hold takes the host's lock for this process if no goroutine of it
// holds it yet, and reloads what other processes changed. Callers hold
// s.mu.
func (s *Sim) hold() {
	if s.held++; s.held > 1 || s.lockf == nil {
		return
	}
	for {
		err := unix.Flock(int(s.lockf.Fd()), unix.LOCK_EX)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EINTR) {
			s.stale = fmt.Errorf("simulated host %s: lock: %w", s.Dir, err)
			return
		}
	}
	s.stale = s.refresh()
}

// release lets the host's lock go when no goroutine of this process
// holds it any more. Callers hold s.mu.
func (s *Sim) release() {
	if s.held--; s.held == 0 && s.lockf != nil {
		_ = unix.Flock(int(s.lockf.Fd()), unix.LOCK_UN)
	}
}

// refresh reloads sim.yaml if another process saved it since this one
// last read or wrote it, and reads the configfs groups from the tree
// (they live only there). Callers hold the host's lock.
func (s *Sim) refresh() error {
	p := filepath.Join(s.Dir, StateFile)
	id, err := statID(p)
	if err != nil {
		return err
	}
	if id != s.loaded {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		st := &State{}
		if err := yaml.Unmarshal(b, st); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		s.state = st
		s.loaded = id
		s.rendered = nil // another process wrote the tree
	}
	s.state.CMGroups = cmGroupsInTree(s.Dir)
	s.state.sortAll()
	return nil
}
