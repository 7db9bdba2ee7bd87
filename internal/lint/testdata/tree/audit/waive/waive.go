// A package under audit/ may not import the providers' root package.
package waive

import _ "github.com/rdmaform/rdmaform/providers"
