//go:build !amd64

package embed

// vectorRough: no vector kernel but on amd64.
const vectorRough = false

// batch reports false: the first step scores word by word (score).
func (r *roughQuery) batch(planes []byte, pos []int, out []int32) bool { return false }
