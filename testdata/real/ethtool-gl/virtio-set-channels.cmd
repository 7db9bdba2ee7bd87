["ethtool", "-L", "eth0", "combined", "3"]
