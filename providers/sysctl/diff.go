package sysctl

import (
	"strconv"

	"github.com/rdmaform/rdmaform/plan"
)

// Attribute names: the value now (/proc/sys) and at boot (ConfFile).
const (
	attrNow  = "value"
	attrBoot = "at_boot"
	absent   = "(absent)"
)

// Plan implements plan.TypedProvider: one change per key whose value now
// or in ConfFile differs, and one per key ConfFile holds that the spec
// no longer gives (removed from the file, left as it is now). A change
// that only sets the value now is "runtime" (the boot unit's apply
// --only runtime makes it: a VF appeared after systemd-sysctl ran); one
// that writes the file is "now".
func (p *Provider) Plan(req *plan.Request, obs *Observed, _ *plan.Facts) plan.Proposal {
	var prop plan.Proposal
	ss := settings(req.Spec)
	for _, s := range ss {
		prop.Managed = append(prop.Managed, plan.Managed{Address: Address(s.key), Path: s.path})
	}
	if req.Spec.Sysctl == nil {
		return prop
	}
	if obs == nil {
		prop.Errors = append(prop.Errors, req.Unreadable("$.sysctl", "the sysctl settings were not read"))
		return prop
	}
	want := map[Key]bool{}
	for _, s := range ss {
		want[s.key] = true
		if s.iface != "" && !obs.Netdevs[s.iface] {
			// A netdev an earlier stage makes (a VF sriov creates, here
			// or in the boot unit's apply): set once it is there, Make
			// waits for it; a name that never appears fails apply.
			inFile, listed := obs.File[s.key]
			pl := &payload{key: s.key, now: s.value, fileBefore: inFile}
			attrs := []plan.Attr{{Name: attrNow, Before: "(no netdev " + s.iface + " yet)", After: s.value}}
			when := plan.Runtime
			if !listed || inFile != s.value {
				pl.file, pl.fileValue, when = true, s.value, plan.Now
				attrs = append(attrs, plan.Attr{Name: attrBoot, Before: orAbsent(inFile, listed), After: s.value})
			}
			prop.Changes = append(prop.Changes, &plan.Change{Address: Address(s.key), Action: plan.Update, Activation: when,
				Source: req.Pos(s.path), Attributes: attrs, Payload: pl})
			continue
		}
		now, ok := obs.Now[s.key]
		if !ok {
			if s.iface != "" {
				prop.Errors = append(prop.Errors, req.Finding(s.path, "%s does not exist: the kernel has no IPv6 on %s (ipv6.disable=1?)", s.key.Proc(), s.iface))
			} else {
				prop.Errors = append(prop.Errors, req.Finding(s.path, "%s does not exist: this kernel has no automatic NUMA balancing (CONFIG_NUMA_BALANCING)", s.key.Proc()))
			}
			continue
		}
		if ak, ok := allKey(s.key); ok {
			if all, err := strconv.Atoi(obs.Now[ak]); err == nil {
				if want, _ := strconv.Atoi(s.value); all > want {
					prop.Errors = append(prop.Errors, req.Finding(s.path, "%s is %d, and the kernel uses the larger of it and %s (ip-sysctl.rst): %s would not take effect; lower %s first (another file of /etc/sysctl.d may set it)",
						ak.Name(), all, s.key.Name(), s.value, ak.Name()))
					continue
				}
			}
		}
		inFile, listed := obs.File[s.key]
		pl := &payload{key: s.key, nowBefore: now, fileBefore: inFile}
		var attrs []plan.Attr
		if now != s.value {
			pl.now = s.value
			attrs = append(attrs, plan.Attr{Name: attrNow, Before: now, After: s.value})
		}
		if !listed || inFile != s.value {
			pl.file, pl.fileValue = true, s.value
			attrs = append(attrs, plan.Attr{Name: attrBoot, Before: orAbsent(inFile, listed), After: s.value})
		}
		if len(attrs) == 0 {
			continue
		}
		act, when := plan.Update, plan.Now
		if !pl.file {
			when = plan.Runtime
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: Address(s.key), Action: act, Activation: when,
			Source: req.Pos(s.path), Attributes: attrs, Payload: pl})
	}
	for k, v := range obs.File {
		if want[k] {
			continue
		}
		prop.Changes = append(prop.Changes, &plan.Change{Address: Address(k), Action: plan.Delete, Activation: plan.Now,
			Source: req.Pos("$.sysctl"), Attributes: []plan.Attr{{Name: attrBoot, Before: v, After: absent}},
			Payload: &payload{key: k, file: true, fileBefore: v}})
	}
	return prop
}

func orAbsent(v string, ok bool) string {
	if !ok {
		return absent
	}
	return v
}
