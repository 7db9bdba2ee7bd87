["ethtool", "-l", "eth0"]
