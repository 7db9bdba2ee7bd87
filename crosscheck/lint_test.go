package crosscheck

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmaform/rdmaform/schema"
)

func hosts(t *testing.T, files map[string]string, order ...string) []*Host {
	t.Helper()
	var out []*Host
	for _, name := range order {
		spec, rep := schema.Parse(name, []byte(files[name]))
		if len(rep) > 0 {
			t.Fatalf("%s: %v", name, rep)
		}
		out = append(out, NewHost(spec))
	}
	return out
}

func TestLint(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name: "seed 001: a RoCE v2 client cannot reach a RoCE v1 server on the same subnet",
			files: map[string]string{
				"client.yaml": "version: 1\ndevices:\n  - name: mlx5_0\n    ports: [{port: 1, roce: {mode: v2}}]\ninterfaces:\n  - {name: ens1f0np0, addresses: [10.0.0.1/24]}\n",
				"server.yaml": "version: 1\ndevices:\n  - name: mlx4_0\n    ports: [{port: 1, roce: {mode: v1}}]\ninterfaces:\n  - {name: ens2, addresses: [10.0.0.2/24]}\n",
			},
			want: []string{
				"client.yaml:4:36: error: $.devices[0].ports[0].roce.mode: client mlx5_0 port 1 (RoCE v2, peer) cannot connect to server mlx4_0 port 1 at server.yaml:4:36 (RoCE v1, peer), both on 10.0.0.0/24: a RoCE v2 client cannot reach a RoCE v1 server (a v1 client can reach a v2 server); use v1 on client's port, or v2 on server's if its adapter supports it (not a ConnectX-3 without Pro)",
			},
		},
		{
			name: "different subnets do not meet",
			files: map[string]string{
				"client.yaml": "version: 1\ndevices:\n  - name: mlx5_0\n    ports: [{port: 1, roce: {mode: v2}}]\ninterfaces:\n  - {name: ens1f0np0, addresses: [10.0.0.1/24]}\n",
				"server.yaml": "version: 1\ndevices:\n  - name: mlx4_0\n    ports: [{port: 1, roce: {mode: v1}}]\ninterfaces:\n  - {name: ens2, addresses: [10.0.1.2/24]}\n",
			},
		},
		{
			name: "no addresses: assumed to meet; same mode is fine",
			files: map[string]string{
				"client.yaml": "version: 1\ndevices:\n  - name: mlx5_0\n    ports: [{port: 1, roce: {mode: v2}}]\n",
				"server.yaml": "version: 1\ndevices:\n  - name: mlx4_0\n    ports: [{port: 1, roce: {mode: v2, tos: 106}}]\n",
			},
		},
		{
			name: "IPoIB on one subnet: P_Key, mode and MTU must agree",
			files: map[string]string{
				"client.yaml": "version: 1\nipoib:\n  - {name: st, parent: ib0, pkey: 0x8002, mode: datagram, mtu: 2044, ipv4: {addresses: [192.0.2.1/24]}}\n",
				"server.yaml": "version: 1\nipoib:\n  - {name: st, parent: ib0, pkey: 0x8003, mode: connected, mtu: 65520, ipv4: {addresses: [192.0.2.2/24]}}\n",
			},
			want: []string{
				"server.yaml:3:35: error: $.ipoib[0].pkey: IPoIB connection st on 192.0.2.0/24 uses P_Key 0x8003, but client (st at client.yaml:3:5) uses 0x8002: hosts of one IPoIB subnet must be in one partition",
				"server.yaml:3:49: error: $.ipoib[0].mode: IPoIB connection st on 192.0.2.0/24 uses connected mode, but client (st at client.yaml:3:5) uses datagram mode",
				"server.yaml:3:65: error: $.ipoib[0].mtu: IPoIB connection st on 192.0.2.0/24 has MTU 65520, but client (st at client.yaml:3:5) has MTU 2044: one subnet needs one MTU",
			},
		},
		{
			name: "an address on two hosts, and on two sections of one",
			files: map[string]string{
				"client.yaml": "version: 1\nhost: {hostname: node1}\ninterfaces:\n  - {name: ens3, addresses: [10.0.0.1/24]}\nipoib:\n  - {name: st, parent: ib0, ipv4: {addresses: [10.0.0.1/16]}}\n",
				"server.yaml": "version: 1\nhost: {hostname: node2}\ninterfaces:\n  - {name: ens3, addresses: [10.0.0.1/24]}\n",
			},
			want: []string{
				"client.yaml:6:48: error: $.ipoib[0].ipv4.addresses[0]: address 10.0.0.1 is also given to node1 at client.yaml:4:30; an address belongs to one interface of one host",
				"server.yaml:4:30: error: $.interfaces[0].addresses[0]: address 10.0.0.1 is also given to node1 at client.yaml:4:30; an address belongs to one interface of one host",
			},
		},
		{
			name: "seed 000: a cable with InfiniBand on one end and Ethernet on the other",
			files: map[string]string{
				"client.yaml": `version: 1
host: {hostname: node1}
devices:
  - pci: "0000:3b:00.0"
    ports:
      - port: 1
        link_layer: InfiniBand
        peer: {host: node2, device: mlx5_0, port: 1}
`,
				"server.yaml": `version: 1
host: {hostname: node2}
devices:
  - name: mlx5_0
    ports:
      - port: 1
        roce: {mode: v2}
        peer: {host: node1, device: "0000:3b:00.0", port: 1}
`,
			},
			want: []string{
				"client.yaml:7:21: error: $.devices[0].ports[0].link_layer: this end of the cable is InfiniBand and the other end, node2 mlx5_0 port 1 (server.yaml:6:9), is Ethernet: both ends would stay down; use one link layer on both (firmware LINK_TYPE or mlx4 type)",
			},
		},
		{
			name: "peers that do not exist or do not name each other",
			files: map[string]string{
				"client.yaml": `version: 1
host: {hostname: node1}
devices:
  - name: mlx5_0
    ports:
      - {port: 1, peer: {host: node2, device: mlx5_9, port: 1}}
      - {port: 2, peer: {host: node2, device: mlx5_0, port: 7}}
      - {port: 3, peer: {host: node2, device: mlx5_0, port: 1}}
      - {port: 4, peer: {host: switch1, device: Eth1/1, port: 1}}
      - {port: 5, peer: {host: node2}}
`,
				"server.yaml": `version: 1
host: {hostname: node2}
devices:
  - name: mlx5_0
    ports:
      - {port: 1, peer: {host: node1, device: mlx5_0, port: 2}}
`,
			},
			want: []string{
				"client.yaml:6:47: error: $.devices[0].ports[0].peer.device: node2's spec (server.yaml) has no device mlx5_9",
				"client.yaml:7:61: error: $.devices[0].ports[1].peer.port: node2's spec (server.yaml) lists no port 7 of mlx5_0",
				"client.yaml:8:25: error: $.devices[0].ports[2].peer: the peer node2 mlx5_0 port 1 names node1 mlx5_0 port 2 as its own peer (server.yaml:6:25), not this port",
				"client.yaml:10:25: error: $.devices[0].ports[4].peer: a peer needs host, device and port",
				"server.yaml:6:25: error: $.devices[0].ports[0].peer: the peer node1 mlx5_0 port 2 names node2 mlx5_0 port 7 as its own peer (client.yaml:7:25), not this port",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range Lint(hosts(t, tt.files, "client.yaml", "server.yaml")) {
				got = append(got, f.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRoCEMatrix covers every cell of the seeds' table (client mode ×
// server mode, an unset mode meaning the adapter's default, which lint
// assumes is v2), with declared roles and with both hosts peers.
func TestRoCEMatrix(t *testing.T) {
	port := func(mode string) string {
		if mode == "" {
			return "{port: 1, link_layer: Ethernet}"
		}
		return "{port: 1, roce: {mode: " + mode + "}}"
	}
	spec := func(role, mode, addr string) string {
		h := ""
		if role != "" {
			h = "host: {role: " + role + "}\n"
		}
		return "version: 1\n" + h + "devices:\n  - name: mlx5_0\n    ports: [" + port(mode) + "]\ninterfaces:\n  - {name: ens1, addresses: [" + addr + "]}\n"
	}
	eff := func(m string) string {
		if m == "" {
			return DefaultMode
		}
		return m
	}
	for _, cm := range []string{"v1", "v2", ""} {
		for _, sm := range []string{"v1", "v2", ""} {
			// The seeds' table: only a v2 client to a v1 server fails.
			wantFail := eff(cm) == "v2" && eff(sm) == "v1"
			if Connects(eff(cm), eff(sm)) == wantFail {
				t.Errorf("Connects(%s, %s) = %v", eff(cm), eff(sm), !wantFail)
			}
			name := "client " + cm + " server " + sm
			t.Run(name+" roles", func(t *testing.T) {
				rep := Lint(hosts(t, map[string]string{
					"c.yaml": spec("client", cm, "10.0.0.1/24"),
					"s.yaml": spec("server", sm, "10.0.0.2/24"),
				}, "c.yaml", "s.yaml"))
				if got := len(rep) > 0; got != wantFail {
					t.Fatalf("findings %v, want a failure: %v", rep, wantFail)
				}
				if wantFail {
					f := rep[0]
					if f.Pos.File != "c.yaml" || !strings.Contains(f.Message, "s.yaml:") || !strings.Contains(f.Message, "(RoCE v1, server)") {
						t.Errorf("finding %s: want it at the client, naming the server's position", f)
					}
					if (cm == "") != strings.Contains(f.Message, "assumed the kernel default") {
						t.Errorf("finding %s: the assumption must be said exactly when the mode is unset", f)
					}
				}
			})
			t.Run(name+" peers", func(t *testing.T) {
				rep := Lint(hosts(t, map[string]string{
					"c.yaml": spec("", cm, "10.0.0.1/24"),
					"s.yaml": spec("", sm, "10.0.0.2/24"),
				}, "c.yaml", "s.yaml"))
				want := 0
				if !Connects(eff(cm), eff(sm)) {
					want++
				}
				if !Connects(eff(sm), eff(cm)) {
					want++
				}
				if len(rep) != want {
					t.Errorf("peers: %d findings, want %d: %v", len(rep), want, rep)
				}
			})
		}
	}
	// A port's role overrides its host's: a client host whose port only
	// accepts is not a client there.
	rep := Lint(hosts(t, map[string]string{
		"c.yaml": "version: 1\nhost: {role: client}\ndevices:\n  - name: mlx5_0\n    ports: [{port: 1, roce: {mode: v2, role: server}}]\n",
		"s.yaml": "version: 1\nhost: {role: server}\ndevices:\n  - name: mlx5_0\n    ports: [{port: 1, roce: {mode: v1}}]\n",
	}, "c.yaml", "s.yaml"))
	if len(rep) != 0 {
		t.Errorf("port role server: %v", rep)
	}
}

// TestToSAndMTU: one network, one ToS for RoCE and one MTU per subnet.
func TestToSAndMTU(t *testing.T) {
	rep := Lint(hosts(t, map[string]string{
		"a.yaml": "version: 1\ndevices:\n  - name: mlx5_0\n    ports: [{port: 1, roce: {tos: 106}}]\ninterfaces:\n  - {name: ens1, mtu: 9000, addresses: [10.0.0.1/24]}\n",
		"b.yaml": "version: 1\ndevices:\n  - name: mlx5_0\n    ports: [{port: 1, roce: {dscp: 26}}]\ninterfaces:\n  - {name: ens1, mtu: 1500, addresses: [10.0.0.2/24]}\n",
		"c.yaml": "version: 1\ndevices:\n  - name: mlx5_0\n    ports: [{port: 1, roce: {dscp: 26, ecn: true}}]\ninterfaces:\n  - {name: ens1, mtu: 9000, addresses: [10.0.0.3/24]}\n",
	}, "a.yaml", "b.yaml", "c.yaml"))
	var got []string
	for _, f := range rep {
		got = append(got, f.String())
	}
	want := []string{
		"b.yaml:4:29: error: $.devices[0].ports[0].roce: b mlx5_0 port 1 uses RoCE ToS 104, but a mlx5_0 port 1 at a.yaml:4:29 uses ToS 106 (both on 10.0.0.0/24): RoCE traffic of one network needs one ToS (one DSCP in the switches' lossless class)",
		"b.yaml:6:23: error: $.interfaces[0].mtu: ens1 on 10.0.0.0/24 has MTU 1500, but a's ens1 at a.yaml:6:23 has MTU 9000: one subnet needs one MTU",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// TestLintLimitedMembers: limited members of a partition meet only full
// members: a subnet of limited members alone is an error on each of them;
// a subnet with a full member is fine.
func TestLintLimitedMembers(t *testing.T) {
	files := map[string]string{
		"a.yaml": "version: 1\nipoib:\n  - {name: st, parent: ib0, pkey: 0x0002, membership: limited, ipv4: {addresses: [192.0.2.1/24]}}\n",
		"b.yaml": "version: 1\nipoib:\n  - {name: st, parent: ib0, pkey: 0x0002, membership: limited, ipv4: {addresses: [192.0.2.2/24]}}\n",
		"c.yaml": "version: 1\nipoib:\n  - {name: st, parent: ib0, pkey: 0x8002, ipv4: {addresses: [198.51.100.3/24]}}\n",
		"d.yaml": "version: 1\nipoib:\n  - {name: st, parent: ib0, pkey: 0x0002, membership: limited, ipv4: {addresses: [198.51.100.4/24]}}\n",
	}
	var got []string
	for _, f := range Lint(hosts(t, files, "a.yaml", "b.yaml", "c.yaml", "d.yaml")) {
		got = append(got, f.String())
	}
	want := []string{
		"a.yaml:3:55: error: $.ipoib[0].membership: IPoIB connection st on 192.0.2.0/24 is a limited member of partition 0x8002, and so is every other host on 192.0.2.0/24: limited members cannot talk to each other; make at least one (the servers) a full member",
		"b.yaml:3:55: error: $.ipoib[0].membership: IPoIB connection st on 192.0.2.0/24 is a limited member of partition 0x8002, and so is every other host on 192.0.2.0/24: limited members cannot talk to each other; make at least one (the servers) a full member",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// TestLintQoS: hosts of one network must agree on DSCP trust and on the
// PFC priorities (the order of the list does not matter); hosts of
// another network, or that leave a key out, are not compared on it.
func TestLintQoS(t *testing.T) {
	host := func(qos, addr string) string {
		return "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        qos: " + qos + "\ninterfaces:\n  - {name: ens1, addresses: [" + addr + "]}\n"
	}
	rep := Lint(hosts(t, map[string]string{
		"a.yaml": host("{trust: dscp, pfc: [3, 4]}", "10.0.0.1/24"),
		"b.yaml": host("{trust: dscp, pfc: [4, 3]}", "10.0.0.2/24"),
		"c.yaml": host("{trust: pcp, pfc: [3]}", "10.0.0.3/24"),
		"d.yaml": host("{pause: false}", "10.0.0.4/24"),
		"e.yaml": host("{trust: pcp, pfc: []}", "10.9.0.1/24"),
	}, "a.yaml", "b.yaml", "c.yaml", "d.yaml", "e.yaml"))
	var got []string
	for _, f := range rep {
		got = append(got, f.String())
	}
	want := []string{
		"c.yaml:6:22: error: $.devices[0].ports[0].qos.trust: c mlx5_0 port 1 trusts pcp, but a mlx5_0 port 1 at a.yaml:6:22 trusts dscp (both on 10.0.0.0/24): one network's hosts must classify RoCE traffic the same way, or it misses the lossless class",
		"c.yaml:6:32: error: $.devices[0].ports[0].qos.pfc: c mlx5_0 port 1 has PFC on priorities 3, but a mlx5_0 port 1 at a.yaml:6:33 on 3,4 (both on 10.0.0.0/24): one network needs PFC on the same priorities on every NIC and switch port",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// TestLintCNP: a CNP priority outside pfc and off a strict ETS class is
// reported at its key, on one host alone; in pfc, or on a strict class,
// it is not. Hosts of one network whose CNPs differ are reported at the
// later host; a host of another network is not compared.
func TestLintCNP(t *testing.T) {
	host := func(qos, addr string) string {
		return "version: 1\ndevices:\n  - name: mlx5_0\n    ports:\n      - port: 1\n        qos: " + qos + "\ninterfaces:\n  - {name: ens1, addresses: [" + addr + "]}\n"
	}
	strict6 := "ets: {prio_tc: [0, 1, 2, 3, 4, 5, 6, 7], tsa: [ets, ets, ets, ets, ets, ets, strict, ets], bw: [10, 10, 10, 40, 10, 10, 0, 10]}"
	rep := Lint(hosts(t, map[string]string{
		"a.yaml": host("{pfc: [3], cnp: {dscp: 48, priority: 6}, "+strict6+"}", "10.0.0.1/24"),
		"b.yaml": host("{pfc: [3, 6], cnp: {dscp: 48, priority: 6}}", "10.0.0.2/24"),
		"c.yaml": host("{pfc: [3], cnp: {dscp: 46, priority: 6}, "+strict6+"}", "10.0.0.3/24"),
		"d.yaml": host("{pfc: [3], cnp: {dscp: 48, priority: 7}, "+strict6+"}", "10.9.0.1/24"),
	}, "a.yaml", "b.yaml", "c.yaml", "d.yaml"))
	var got []string
	for _, f := range rep {
		got = append(got, f.String())
	}
	want := []string{
		"b.yaml:6:20: error: $.devices[0].ports[0].qos.pfc: b mlx5_0 port 1 has PFC on priorities 3,6, but a mlx5_0 port 1 at a.yaml:6:20 on 3 (both on 10.0.0.0/24): one network needs PFC on the same priorities on every NIC and switch port",
		"c.yaml:6:30: error: $.devices[0].ports[0].qos.cnp: c mlx5_0 port 1 sends CNPs with dscp 46, priority 6, but a mlx5_0 port 1 at a.yaml:6:30 with dscp 48, priority 6 (both on 10.0.0.0/24): one network's CNPs belong in one class on every NIC and switch port",
		"d.yaml:6:51: error: $.devices[0].ports[0].qos.cnp.priority: d mlx5_0 port 1 sends CNPs on priority 7, which is neither in pfc nor on a strict ETS class: CNPs queued behind data or dropped under congestion come too late for DCQCN; add it to pfc or give its class tsa strict",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}
