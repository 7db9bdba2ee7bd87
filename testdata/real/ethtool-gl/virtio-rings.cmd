["ethtool", "-g", "eth0"]
