// Package words holds the small helpers rdmaform's messages share.
package words

// Plural is one when n is 1, else many: "1 change", "2 changes".
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
