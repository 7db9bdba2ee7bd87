package nmcli

import (
	"strings"
	"testing"
)

// escapeTabular escapes one value as nmcli -t does: '\' and ':' get a
// backslash.
func escapeTabular(s string) string {
	return strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(s)
}

// FuzzSplitTabular: any line parses; values nmcli escaped come back as
// they were, however many ':' and '\' they hold.
func FuzzSplitTabular(f *testing.F) {
	f.Add("ib0-storage", "8e1d5b6c-3b9a-4c2b-9d55-0f4f3c1c2b01", "infiniband")
	f.Add(`a:b\c`, "", `\\:`)
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		for _, s := range []string{a, b, c} {
			if strings.ContainsAny(s, "\n\r") {
				return // one line per record; nmcli never prints these inside a value
			}
		}
		line := escapeTabular(a) + ":" + escapeTabular(b) + ":" + escapeTabular(c)
		got := SplitTabular(line)
		if len(got) != 3 || got[0] != a || got[1] != b || got[2] != c {
			t.Fatalf("SplitTabular(%q) = %q, want [%q %q %q]", line, got, a, b, c)
		}
		_ = SplitTabular(a) // raw text: never panics
	})
}

// FuzzParseList: any output either parses into entries, each from a row
// of six fields (ACTIVE is yes only when it says yes), or is an error;
// never a panic.
func FuzzParseList(f *testing.F) {
	f.Add([]byte("ib0-storage:8e1d5b6c-3b9a-4c2b-9d55-0f4f3c1c2b01:infiniband:ib0.8002:yes:activated\n"))
	f.Add([]byte("a\\:b:u:ethernet:::\r\n\n"))
	f.Add([]byte(":::::\n::::::\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		entries, err := ParseList(out)
		if err != nil {
			return
		}
		rows, err := ParseTabular(out, len(ListFields()))
		if err != nil || len(rows) != len(entries) {
			t.Fatalf("ParseList and ParseTabular disagree: %d entries, %d rows, %v", len(entries), len(rows), err)
		}
		for i, e := range entries {
			if e.Active != (rows[i][4] == "yes") || e.UUID != rows[i][1] {
				t.Fatalf("entry %d = %+v from row %q", i, e, rows[i])
			}
		}
	})
}

// FuzzParseProfiles: multiline output parses into profiles or an error,
// never a panic; every profile parsed has a UUID and records hold each
// field once.
func FuzzParseProfiles(f *testing.F) {
	f.Add([]byte("connection.id:ib0-storage\nconnection.uuid:u-1\nconnection.type:infiniband\ninfiniband.mtu:2044\ninfiniband.p-key:0x8002\nipv6.addresses:2001:db8::1/64\n\nconnection.id:x\nconnection.uuid:u-2\n"))
	f.Add([]byte("connection.uuid:u\ninfiniband.mtu:auto\ninfiniband.p-key:default\nipv4.addresses:192.0.2.1/24, 192.0.2.2/24\nGENERAL.STATE:activated\n"))
	f.Add([]byte("no colon here\n"))
	f.Add([]byte("connection.uuid:u\ninfiniband.p-key:0x10000\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		recs, err := ParseMultiline(out)
		if err == nil {
			for _, r := range recs {
				seen := map[string]bool{}
				for _, k := range r.Fields {
					if seen[k] {
						t.Fatalf("field %q twice in one record", k)
					}
					seen[k] = true
				}
			}
		}
		ps, err := ParseProfiles(out)
		if err != nil {
			return
		}
		for _, p := range ps {
			if p.UUID == "" {
				t.Fatalf("profile %q without a UUID", p.Name)
			}
			if p.PKey < PKeyDefault || p.PKey > 0xffff {
				t.Fatalf("P_Key %d out of range", p.PKey)
			}
		}
	})
}

// FuzzParseAdded: a UUID comes back only from the documented line, and
// it is the 36 characters in the last parenthesis.
func FuzzParseAdded(f *testing.F) {
	f.Add([]byte("Connection 'ib0 (storage)' (8e1d5b6c-3b9a-4c2b-9d55-0f4f3c1c2b01) successfully added.\n"))
	f.Add([]byte("Connection '' () successfully added."))
	f.Add([]byte("Error: failed"))
	f.Fuzz(func(t *testing.T, out []byte) {
		uuid, err := ParseAdded(out)
		if err != nil {
			return
		}
		if len(uuid) != 36 || !strings.Contains(string(out), "("+uuid+") successfully added.") {
			t.Fatalf("ParseAdded(%q) = %q", out, uuid)
		}
	})
}
