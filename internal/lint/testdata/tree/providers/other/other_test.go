// A provider's test may import another provider.
package other

import _ "github.com/rdmaform/rdmaform/providers/toy"
