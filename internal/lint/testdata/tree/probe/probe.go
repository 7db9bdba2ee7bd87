// Nor probe's, on a package under sim/.
package probe

import _ "github.com/rdmaform/rdmaform/sim/nmsim"
