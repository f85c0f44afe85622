//go:build !amd64

package embed

// vectorRough, vectorDot: no vector kernels but on amd64.
const vectorRough, vectorDot = false, false

// batch reports false: the first step scores word by word (score).
func (r *roughQuery) batch(planes []byte, pos []int, out []int32) bool { return false }

// dot is the integer dot product of the query and a row.
func (e *exactQuery) dot(row []byte) int32 { return dot(e.qq, row) }

// newExactQuery is qq ready for dot.
func newExactQuery(qq []int32) *exactQuery { return &exactQuery{qq: qq} }
