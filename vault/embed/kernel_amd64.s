#include "textflag.h"

// The first step's score (roughQuery.score) of many documents, eight
// words of a plane at a time: per chunk, with x and y the document's
// planes of +1 and -1, u = x|y and t = u&(sign^y), the chunk adds, lane by
// lane, Σk 2^k·(popcount(Mk&u) - 2·popcount(Mk&t)); the eight lanes are
// summed once per document.

// func roughAVX512(planes *byte, stride, chunks int, lastMask uint64, q *uint64, pos []int, out []int32)
TEXT ·roughAVX512(SB), NOSPLIT, $0-88
	MOVQ planes+0(FP), SI
	MOVQ stride+8(FP), R8
	MOVQ R8, R9
	SHRQ $1, R9                 // nb: the plane of -1 starts nb bytes on
	MOVQ chunks+16(FP), R10
	MOVQ lastMask+24(FP), AX
	KMOVW AX, K2                // the words of the last chunk
	MOVQ $0xff, AX
	KMOVW AX, K1                // every word of a chunk
	MOVQ q+32(FP), DX
	MOVQ pos_base+40(FP), BX
	MOVQ pos_len+48(FP), CX
	MOVQ out_base+64(FP), DI
	XORQ R11, R11               // j

doc:
	CMPQ R11, CX
	JGE  done
	MOVQ (BX)(R11*8), R12
	IMULQ R8, R12
	ADDQ SI, R12                // the document's plane of +1
	MOVQ DX, R13                // the query's first chunk
	MOVQ R10, AX                // chunks left
	VPXORQ Z8, Z8, Z8           // the sum, lane by lane

chunk:
	KMOVW K1, K3
	CMPQ AX, $1
	JNE  load
	KMOVW K2, K3

load:
	VMOVDQU64.Z (R12), K3, Z0          // x
	VMOVDQU64.Z (R12)(R9*1), K3, Z1    // y
	VPORQ   Z1, Z0, Z2                 // u
	VPXORQ  (R13), Z1, Z3              // sign ^ y
	VPANDQ  Z2, Z3, Z3                 // t
	VPANDQ  64(R13), Z2, Z4            // M0 & u
	VPANDQ  64(R13), Z3, Z5            // M0 & t
	VPANDQ  128(R13), Z2, Z6           // M1 & u
	VPANDQ  128(R13), Z3, Z7           // M1 & t
	VPANDQ  192(R13), Z2, Z9           // M2 & u
	VPANDQ  192(R13), Z3, Z10          // M2 & t
	VPOPCNTQ Z4, Z4
	VPOPCNTQ Z5, Z5
	VPOPCNTQ Z6, Z6
	VPOPCNTQ Z7, Z7
	VPOPCNTQ Z9, Z9
	VPOPCNTQ Z10, Z10
	VPSLLQ  $1, Z6, Z6
	VPSLLQ  $2, Z9, Z9
	VPADDQ  Z6, Z4, Z4
	VPADDQ  Z9, Z4, Z4                 // Σk 2^k·popcount(Mk&u)
	VPSLLQ  $1, Z7, Z7
	VPSLLQ  $2, Z10, Z10
	VPADDQ  Z7, Z5, Z5
	VPADDQ  Z10, Z5, Z5                // Σk 2^k·popcount(Mk&t)
	VPSLLQ  $1, Z5, Z5
	VPSUBQ  Z5, Z4, Z4
	VPADDQ  Z4, Z8, Z8
	ADDQ $64, R12
	ADDQ $256, R13
	DECQ AX
	JNZ  chunk

	VEXTRACTI64X4 $1, Z8, Y9
	VPADDQ  Y9, Y8, Y8
	VEXTRACTI128 $1, Y8, X9
	VPADDQ  X9, X8, X8
	VPSHUFD $0x4e, X8, X9
	VPADDQ  X9, X8, X8
	VMOVQ   X8, AX
	MOVL AX, (DI)(R11*4)
	INCQ R11
	JMP  doc

done:
	VZEROUPPER
	RET

// The exact step's dot product of the quantised query (as 16-bit values,
// zero past its end to a multiple of 32) and a row of n signed bytes, 32
// dimensions at a time: the row's bytes widened to 16 bits, multiplied by
// the query's and summed in pairs to 32 bits (no sum can overflow: 768 ×
// 127 × 127 is under 2^24), the last chunk's bytes read under a mask.

// func dotAVX512(q *int16, row *byte, n int, tailMask uint32) int32
TEXT ·dotAVX512(SB), NOSPLIT, $0-36
	MOVQ q+0(FP), SI
	MOVQ row+8(FP), DI
	MOVQ n+16(FP), DX
	VPXORD Z0, Z0, Z0
	SHRQ $5, DX                 // whole chunks of 32
	JZ   tail

whole:
	VPMOVSXBW (DI), Z1
	VPMADDWD  (SI), Z1, Z1
	VPADDD    Z1, Z0, Z0
	ADDQ $32, DI
	ADDQ $64, SI
	DECQ DX
	JNZ  whole

tail:
	MOVL tailMask+24(FP), AX
	TESTL AX, AX
	JZ   sum
	KMOVD AX, K1
	VPMOVSXBW.Z (DI), K1, Z1
	VPMADDWD  (SI), Z1, Z1
	VPADDD    Z1, Z0, Z0

sum:
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDD  Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD  X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDD  X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPADDD  X1, X0, X0
	VMOVD   X0, AX
	MOVL AX, ret+32(FP)
	VZEROUPPER
	RET
