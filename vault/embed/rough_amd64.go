package embed

import "golang.org/x/sys/cpu"

// vectorRough is whether the first step may score with the AVX-512
// kernel (rough_amd64.s): the processor counts bits in eight words at
// once (AVX512VPOPCNTDQ) and the system saves the wide registers.
var vectorRough = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPOPCNTDQ

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
