// os under another name is still os.
package apply

import sys "os"

func renamed() { _, _ = sys.Stat("/") }
