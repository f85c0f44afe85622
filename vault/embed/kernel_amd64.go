package embed

import "golang.org/x/sys/cpu"

// vectorRough is whether the first step may score with the AVX-512
// kernel (kernel_amd64.s): the processor counts bits in eight words at
// once (AVX512VPOPCNTDQ) and the system saves the wide registers;
// vectorDot whether the exact step may, with AVX-512 on 16-bit values
// (AVX512BW).
var (
	vectorRough = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPOPCNTDQ
	vectorDot   = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW
)

// The kernel reads a chunk of lanes as sign and three planes of the
// query's magnitude (offsets 0, 64, 128 and 192; shifts by 1 and 2): it
// does not build unless roughBits is 3.
const _, _ = uint(roughBits - 3), uint(3 - roughBits)

// roughAVX512 sets out[j] to the first step's score of the document at
// pos[j] (roughQuery.score): the document's planes start at planes +
// pos[j]·stride, its plane of -1 stride/2 bytes after its plane of +1;
// q is the query in chunks of eight words (roughQuery.lanes), the last
// chunk's words those of lastMask. The caller checks that every plane
// read lies in the slice planes points into.
//
//go:noescape
func roughAVX512(planes *byte, stride, chunks int, lastMask uint64, q *uint64, pos []int, out []int32)

// batch scores the documents at pos into out with the vector kernel and
// reports true, or does nothing and reports false where it cannot: no
// kernel on this processor, planes that do not end on a word, or a
// position outside planes.
func (r *roughQuery) batch(planes []byte, pos []int, out []int32) bool {
	if !vectorRough || r.lanes == nil || len(pos) == 0 {
		return false
	}
	stride := 2 * r.nb
	n := len(planes) / stride
	for _, i := range pos {
		if uint(i) >= uint(n) {
			return false
		}
	}
	chunks := len(r.lanes) / laneChunk
	roughAVX512(&planes[0], stride, chunks, r.lastMask, &r.lanes[0], pos, out[:len(pos)])
	return true
}

// dotAVX512 is the dot product of the query q, 16-bit values zero from n
// on to a multiple of 32, and the n signed bytes at row; tailMask has a
// bit for each of the last n%32 bytes.
//
//go:noescape
func dotAVX512(q *int16, row *byte, n int, tailMask uint32) int32

// dot is the integer dot product of the query and a row of at least as
// many bytes as the query has values.
func (e *exactQuery) dot(row []byte) int32 {
	if e.q16 == nil {
		return dot(e.qq, row)
	}
	_ = row[len(e.qq)-1]
	return dotAVX512(&e.q16[0], &row[0], len(e.qq), e.tail)
}

// newExactQuery is qq ready for dot: with the vector kernel, as 16-bit
// values padded to a multiple of 32.
func newExactQuery(qq []int32) *exactQuery {
	e := &exactQuery{qq: qq}
	if vectorDot && len(qq) > 0 {
		e.q16 = make([]int16, (len(qq)+31)/32*32)
		for j, q := range qq {
			e.q16[j] = int16(q)
		}
		e.tail = 1<<(len(qq)%32) - 1
	}
	return e
}
