// Outside the providers, code may read a change's attributes.
package audit

type attr struct{ Before, After string }

func after(a attr) string { return a.Before + a.After }
