// capture.go of a package under a provider is not a provider's capture.
package sub

import "context"

var _ context.Context
