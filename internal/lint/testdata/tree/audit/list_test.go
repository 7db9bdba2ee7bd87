// A test of the audit may import a provider.
package audit

import _ "github.com/rdmaform/rdmaform/providers/toy"
