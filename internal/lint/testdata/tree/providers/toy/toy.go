package toy

import "time"

type attr struct{ Before, After string }

func peek(a attr) string {
	<-time.After(time.Millisecond)
	return a.After
}

type Provider struct{}

func (*Provider) Make() error { return nil }

type change struct{ Payload any }

func payloadOf(c change) *attr { p, _ := c.Payload.(*attr); return p }
