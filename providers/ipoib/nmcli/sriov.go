package nmcli

import (
	"strings"
)

// SRIOVFields are the fields SRIOVOwnersArgs asks for.
func SRIOVFields() []string {
	return []string{"connection.uuid", "connection.id", "connection.interface-name", "sriov.total-vfs"}
}

// SRIOVOwnersArgs asks NetworkManager which of the given profiles carry
// an sriov setting. Equivalent to:
// nmcli -t -f connection.uuid,connection.id,connection.interface-name,sriov.total-vfs connection show uuid U1 ...
func SRIOVOwnersArgs(uuids []string) []string {
	argv := []string{"nmcli", "-t", "-f", strings.Join(SRIOVFields(), ","), "connection", "show"}
	for _, u := range uuids {
		argv = append(argv, "uuid", u)
	}
	return argv
}

// SRIOVOwner is a profile with an sriov setting: NetworkManager sets the
// VF count of its interface when it activates it (also 0) and resets it
// when it deactivates it.
type SRIOVOwner struct {
	UUID, Name, Interface string
	TotalVFs              string
}

// ParseSRIOVOwners reads SRIOVOwnersArgs' output and returns the profiles
// that have an sriov setting (a sriov.total-vfs value); the others print
// the field empty.
func ParseSRIOVOwners(out []byte) ([]SRIOVOwner, error) {
	recs, err := ParseMultiline(out)
	if err != nil {
		return nil, err
	}
	var owners []SRIOVOwner
	for _, r := range recs {
		v, _ := r.Get("sriov.total-vfs")
		if v == "" {
			continue
		}
		o := SRIOVOwner{TotalVFs: v}
		o.UUID, _ = r.Get("connection.uuid")
		o.Name, _ = r.Get("connection.id")
		o.Interface, _ = r.Get("connection.interface-name")
		owners = append(owners, o)
	}
	return owners, nil
}
