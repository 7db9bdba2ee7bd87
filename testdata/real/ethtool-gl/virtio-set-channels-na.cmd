["ethtool", "-L", "eth0", "rx", "2"]
