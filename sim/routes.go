package sim

import "github.com/rdmaform/rdmaform/host"

var _ host.RouteLister = (*simNet)(nil)

// DefaultRouteLinks implements host.RouteLister: the simulated host's
// default route leaves through State.DefaultRoute, while that netdev is up.
func (n *simNet) DefaultRouteLinks() ([]string, error) {
	var out []string
	err := n.read(func(st *State) error {
		if nd := st.Netdev(st.DefaultRoute); nd != nil && nd.Up {
			out = []string{nd.Name}
		}
		return nil
	})
	return out, err
}
