["nmcli","connection","add","type","infiniband","con-name","ib6-plain","ifname","ib6","connection.autoconnect","no"]
