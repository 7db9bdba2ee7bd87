["nmcli","connection","modify","07dab37b-5a3e-47d0-90c6-547d47cf299d","infiniband.mtu","lots"]
