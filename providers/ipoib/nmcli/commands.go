package nmcli

import "strings"

// ListFields are the columns ListArgs asks for, in order.
func ListFields() []string {
	return []string{"NAME", "UUID", "TYPE", "DEVICE", "ACTIVE", "STATE"}
}

// ListArgs lists every profile, one escaped tabular line each.
//
// Equivalent to: nmcli -t -f NAME,UUID,TYPE,DEVICE,ACTIVE,STATE connection show
func ListArgs() []string {
	return []string{"nmcli", "-t", "-f", strings.Join(ListFields(), ","), "connection", "show"}
}

// ShowArgs prints the managed properties of several profiles in one run:
// multiline terse blocks, in the order of the selectors, separated by an
// empty line.
//
// Equivalent to: nmcli -t -f connection.id,... connection show uuid U1 uuid U2 ...
func ShowArgs(uuids []string) []string {
	argv := []string{"nmcli", "-t", "-f", strings.Join(ProfileFields(), ","), "connection", "show"}
	for _, u := range uuids {
		argv = append(argv, "uuid", u)
	}
	return argv
}

// AddArgs creates the profile p (normalized); properties left at
// NetworkManager's defaults are not written.
//
// Equivalent to: nmcli connection add type infiniband con-name NAME PROP VALUE ...
func AddArgs(p Profile) []string {
	argv := []string{"nmcli", "connection", "add", "type", "infiniband", "con-name", p.Name}
	for _, s := range Settings(p) {
		if isAddDefault(s) {
			continue
		}
		argv = append(argv, s.Name, s.Value)
	}
	return argv
}

// isAddDefault reports whether a setting holds the value a fresh
// `connection add type infiniband` already has.
func isAddDefault(s Setting) bool {
	switch s.Name {
	case "connection.autoconnect":
		return s.Value == "yes"
	case "infiniband.mtu":
		return s.Value == "auto"
	case "infiniband.p-key":
		return s.Value == "default"
	case "infiniband.transport-mode":
		return s.Value == string(Datagram)
	}
	return s.Value == ""
}

// ModifyArgs sets exactly the given properties of one profile. An empty
// value clears a property. NetworkManager checks the profile once, after
// all of them, so dependent properties (method and addresses) go together.
//
// Equivalent to: nmcli connection modify uuid UUID PROP VALUE ...
func ModifyArgs(uuid string, settings []Setting) []string {
	argv := []string{"nmcli", "connection", "modify", "uuid", uuid}
	for _, s := range settings {
		argv = append(argv, s.Name, s.Value)
	}
	return argv
}

// UpArgs activates a profile and waits for the result (nmcli's default
// wait: 90 s).
//
// Equivalent to: nmcli connection up uuid UUID
func UpArgs(uuid string) []string { return []string{"nmcli", "connection", "up", "uuid", uuid} }

// DownArgs deactivates a profile. Equivalent to: nmcli connection down uuid UUID
func DownArgs(uuid string) []string { return []string{"nmcli", "connection", "down", "uuid", uuid} }

// DeleteArgs deletes a profile (and deactivates it).
//
// Equivalent to: nmcli connection delete uuid UUID
func DeleteArgs(uuid string) []string {
	return []string{"nmcli", "connection", "delete", "uuid", uuid}
}

// RunningArgs asks whether NetworkManager runs; it prints "running".
//
// Equivalent to: nmcli -t -f RUNNING general
func RunningArgs() []string { return []string{"nmcli", "-t", "-f", "RUNNING", "general"} }
