["ethtool", "-a", "eth0"]
