["nmcli","connection","add","type","infiniband","con-name","odd:name\\with","ifname","ib1","infiniband.transport-mode","connected","infiniband.mtu","65520","connection.autoconnect","no"]
