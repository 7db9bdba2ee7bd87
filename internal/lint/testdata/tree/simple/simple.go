// simple/ is not sim/: it may import a provider.
package simple

import _ "github.com/rdmaform/rdmaform/providers/toy"
