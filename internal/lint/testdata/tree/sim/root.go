// The simulator's own package may not import probe's parsers.
package sim

import _ "github.com/rdmaform/rdmaform/probe"
