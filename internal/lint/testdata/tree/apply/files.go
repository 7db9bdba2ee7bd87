// Every os file and process function.
package apply

import (
	"os"
	"time"
)

func files() {
	_, _ = os.Open("")
	_, _ = os.OpenFile("", 0, 0)
	_, _ = os.Create("")
	_, _ = os.CreateTemp("", "")
	_, _ = os.ReadFile("")
	_ = os.WriteFile("", nil, 0)
	_, _ = os.ReadDir("")
	_ = os.Mkdir("", 0)
	_ = os.MkdirAll("", 0)
	_, _ = os.MkdirTemp("", "")
	_ = os.Remove("")
	_ = os.RemoveAll("")
	_ = os.Rename("", "")
	_, _ = os.Stat("")
	_, _ = os.Lstat("")
	_, _ = os.Readlink("")
	_ = os.Symlink("", "")
	_ = os.Link("", "")
	_ = os.Chmod("", 0)
	_ = os.Chown("", 0, 0)
	_ = os.Lchown("", 0, 0)
	_ = os.Truncate("", 0)
	_ = os.Chdir("")
	_ = os.DirFS("")
	_, _ = os.StartProcess("", nil, nil)
	_ = os.Chtimes("", time.Time{}, time.Time{})
	_ = os.Getenv("HOME")
	_ = os.Args
}
