// nmcli's parser may not depend on the simulator.
package nmcli

import _ "github.com/rdmaform/rdmaform/sim"
