["mlxconfig", "-d", "c2:00.0", "-y", "set", "BOOT_VLAN=0", "BOOT_LACP_DIS=1", "BOOT_VLAN_EN=0", "BOOT_UNDI_NETWORK_WAIT=30"]
