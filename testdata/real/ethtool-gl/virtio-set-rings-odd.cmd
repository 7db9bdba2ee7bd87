["ethtool", "-G", "eth0", "rx", "100"]
