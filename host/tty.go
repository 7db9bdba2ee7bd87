package host

import "golang.org/x/sys/unix"

// IsTerminal reports whether fd is a terminal: it answers the terminal
// ioctl. /dev/null, a pipe or a file do not (a character device alone is
// not a terminal).
//
// Equivalent to: test -t FD
func IsTerminal(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
	return err == nil
}
