module github.com/rdmaform/rdmaform

go 1.26.8

require (
	github.com/Mellanox/rdmamap v1.1.0
	github.com/google/go-cmp v0.7.0
	github.com/hashicorp/go-multierror v1.1.1
	github.com/spf13/cobra v1.10.2
	github.com/vishvananda/netlink v1.3.1
	golang.org/x/sys v0.26.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
)
