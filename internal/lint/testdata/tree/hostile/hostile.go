// hostile/ is not host/.
package hostile

import "os"

func peek() { _, _ = os.Stat("/") }
