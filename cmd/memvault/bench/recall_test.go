package bench

// Retrieval at scale: `memvault reindex` and `memvault recall` as whole
// processes on 100k or 1M generated transcript messages, beside grep and
// SQLite FTS5 (cmd/memvault/bench/fts5, a module of its own) on the same messages, all
// in the same run. docs/PERFORMANCE.md ("Current results", rows 7 and 14) has the
// figures.
//
//	go test -run '^$' -bench RecallScale -benchtime 1x -timeout 3h ./cmd/memvault/bench/
//	MEMVAULT_BENCH_MESSAGES=1000000 go test -run '^$' -bench RecallScale -benchtime 1x -timeout 3h ./cmd/memvault/bench/
//
// MEMVAULT_BENCH_CACHE=DIR keeps the generated vault and corpus in DIR and
// copies them for each run, since generating 1M messages takes minutes.
// MEMVAULT_BENCH_ROUNDS (default 3) is how many times each query is timed.
// MEMVAULT_BENCH_BASELINE=BIN also indexes a copy of the vault with another
// memvault binary (build main's to compare a change) and times its recalls
// interleaved with this one's.
//
// TestRecallScaleProfile profiles recall in-process on such a vault (it is
// skipped unless MEMVAULT_BENCH_PROFILE names the CPU profile to write):
//
//	MEMVAULT_BENCH_CACHE=/tmp/mvcache MEMVAULT_BENCH_PROFILE=/tmp/recall.pprof \
//	    go test -run TestRecallScaleProfile -v ./cmd/memvault/bench/

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/embed/embedtest"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/recall"
	"github.com/memvault/memvault/vault/scope"
	"github.com/memvault/memvault/vault/transcript"
)

const (
	scaleSeed        = 20261122
	scaleSessionMsgs = 100 // messages per session
	scaleThreads     = 200
	scaleTxSessions  = 100 // sessions per transaction
	scaleTailBytes   = 1 << 20
)

// scaleVocab is a ranked vocabulary: the 3,000 most frequent words of the
// English comments in the Go 1.26 standard library, most frequent first.
// Drawn with a Zipf law over the ranks it gives technical English whose
// word frequencies look like real text.
var scaleVocab = strings.Fields(`
	the is to of in and go that for be this it if we
	by not an with can use file or are all as returns on error
	block code from so offset type value but source found will copyright reserved at
	bytes rights style only authors license governed must when which test set have should
	see any package may used string int no function name one path err build
	nil call has there data issue new into non check do stack because first
	sys using case return number time whether version same don before then its output
	does list values module pointer after size field other more each run byte runtime
	need line bit read write given than zero called make also was https up
	here key empty address linkname like slice method section out some returned object they
	files just result reports org types instead request since directory note nosplit libc interface
	handle re goroutine bits without memory these calls add get otherwise next true command
	valid length connection always end where already point default packages start example them internal
	current two symbol tests encoding such state mod would been order index system map
	doesn mode heap avoid cgo com functions buffer work single contains both implements flag
	server process even now match input flags struct errors fd context golang generated information
	header copy argument sets text uses table above space fields signal level entry comment
	vd caller import either arguments windows about different dev hash frame special during false
	vm change user sure could below want represents element names might lock last until
	form between being body close most cases still root main invalid multiple methods running
	specified defined client named find implementation token calling base cannot thread cmd while tag
	array remove prefix symbols program src possible linux binary variable over include format back
	support try keep cache len least writes create those syscall provided ensure panic per
	too message trace underlying specific us following objects means handler generate encoded written never
	our goroutines response mark needed safe their local versions position what net itself once
	ignore reader wait indicates done range os record uintptr directly target checks compiler access
	parameter signature open content expression paths io full way through part enough behavior host
	free pointers allocated span available constant elements within were link update rd race standard
	scan matches http how another github template func strings xn parameters modules containing pass
	large corresponding allocation load original entries count contain via register send integer panics print
	pattern long foo associated sequence loop passed stream instruction log allow limit addr expected
	testing known kind details know based present fail tags second rune verify sysnb image
	actually every skip look results profile nothing linker event reads requests parse old setting
	library runs operation report ignored created take off supported less again network random necessary
	cycle final environment relative top explicitly equivalent representation reading currently closed cause records however
	extra dst buf character many lines addresses parent counter lib equal control graph additional
	usr store receiver needs external comments small operations page certificate existing creates child adds
	later unsafe literal node keys including noescape characters actual enabled correct writing yet previous
	complete allowed added according unix changes rather global reflect query well parses leading common
	happen compute tree variables followed exit isn checking shift returning lookup stop implemented dir
	vn ll allocate status sign right longer algorithm matching exported group crypto times shared
	info writer required points domain dependencies html maximum syntax systems idle channel stored tool
	inf except let against trailing exists takes ok else fails reference determine execution dylib
	action word overflow conn blocks sync requires immediately documentation amount won software portions due
	left starting assume options makes inside headers holds chunk unicode own convert require maps
	imports unmarshal statement expect transport connections pkg starts sent negative json future frames release
	absolute bounds typ queue op appear very specifies toolchain timer timeout relocation exactly debug
	you thus embedded structure reset compile numbers built darwin contents platforms much implement identifier
	ve spec registers atomic around scope id side down beginning deprecated arena provides exist
	pseudo anything put language init args region under search provide option explicit works missing
	rj mask double public precision decode copies unless split regular max correctly www remaining
	descriptor usage updated clear big general bool suffix hold unknown ptr constants consider concurrent
	apply allows signals etc prints members changed marshal linking better generic doc something simple
	pair godefs pool export causes socket executable digits sum stat round possibly initial particular
	low events decoder declaration segment requirements parsing larger attribute lower fixed sort garbage looks
	identical exact though sub script private pos instructions high exec assembly removed relocations parsed
	pages included optional marked config effect dynamic resolve noinline issues eval crash concurrently class
	canonical place similar sections prevent modify fix directories continue stores short handled vendor select
	carry save requested handling callers real location likely happens going give care basic world
	separate messages kernel ensures commands pipe outside doing allocations resulting raw instance quoted help
	considered cached slices port imported handshake fast dial blocked atomically color switch patterns flush
	whose replace preemption held accept protocol mapping waiting symlink sorted adding updates padding emit
	append alias able pc normal includes endian disable compare reuse operating escape entire encode
	bad attempt typically represented probably spaces extension dependency active trigger selected security newline loaded
	users roots force direct detail reason head converts barrier total generation appropriate proxy float
	describes defer conversion blocking width three spans scanner reported guaranteed gp failure tools en
	closing whole stopped minimum driver chain break transition problem interfaces git arg ready parser
	initialized failed anyway occurs js grow generates defines var usually label didn made hall
	escaped modified math floating definition null making appends widely unique static checked val separated
	secret execute bug various sweep lists inlined freebsd decimal little inputs fmt ends blank
	produce move logic install consistent wrapper threads references ones shame really notable iteration encoder
	declared copied aligned tokens locks earlier device creating configuration best arbitrary wrong wasm phase
	good forsyth extended curve handles got duplicate pre meaning leave gri everything cleanup background
	step regexp programs obj none mutex cipher bitmap assumes treat rounding operand mapped initialize
	higher half exponent alive addition across words useful why temporary shouldn compatibility unit having
	goal few described deadline sending scanning archive rsc processing fully depth define database complex
	undefined turn represent removes rest mantissa machine clean barriers vt tb previously push live
	attributes untyped receive passing parallel custom condition chunks bar applies vet verifies unexported rk
	properly permission omitted gets formats filter decoding track representing openbsd looking compiled trying therefore
	ta notice depending seed rules replacement plan latest infinity fn architecture upper sym signed
	listed initialization indicate important greater disabled coverage collect bound significant rows nodes limited early
	checksum sleep session received leaf buffers working uid started pprof destination derived begin alignment
	treated resolved gcc digit ast worker follow duration docs slash finish extensions cancel replaced
	expressions prefer declarations supports resolver printed had did computed boolean slow seen performs depend
	cycles traceback locked gid debugging clone together populated loading further application wd unsigned stacks
	runes ranges performance past logger enable drop collector swap slot scheduler ref progress perform
	fetch description building arm wraps unlike subsequent simply restore overlap marks whitespace preserve normally
	merge installed inc exception column appears xd window things structs says row holding goexperiment
	constraint xm solaris smaller related microsoft insert identifiers fj finalizer closes acquire unused profiling
	linked intended depends wildcard stats potentially adjust structures regardless recorded kept fall tables ps
	pending parts nested instantiated examples dot deadlock converted certificates along allocating workspace successfully reject
	partial montgomery leak env corresponds th reduce others metadata binaries accepts sizes recursive printing
	implicit executing executed constraints prior pi occur multi ip gc fine expects automatically assignment
	summary sends scheme refer min helper hello freed finds encountered zip specify rate operands
	maybe loader inline inferno emits sized meta invoked fit commit capacity relevant performed origin
	decoded component bucket rewrite produces msg lead detector delete construct cond clients scans letter
	hi growth exp completed ciphertext wn unchanged termination reachable plus iterator failretval core consume
	away tell show semantics ld hard escaping delay comma become tracing guarantee directives attempts
	zeros telemetry redirect produced prime platform ms formatting copying cookie controls conditions allocates templates
	sched poll netbsd matter gccgo fatal directive boundary avoids subject indirect gives formatted detect
	changing affect stdout priority offsets numeric indicating executes encodes aren walk unmarshaling reasons property
	lo incomplete follows comparison chance becomes systemstack rsa rand permit malloc imm extend dump
	cover channels wrapped wake uint tiny share pid mean master marshaling buffered applied self
	positive mmap generator faster distribution delta decodes collection alpha trie tls timers service reporting
	hex division consumed certain arrays succeed stops signatures remainder major listen internally forward download
	bootstrap account testdata terms sin registerparams middle member interval date builds square sample repo
	registered prevents precedence outer optimization often nor listener invariant hashes difference allocator accessed queries
	opaque fork finished easy assumed assigned sometimes repository processes passes partially integers fallback errno
	checker beyond begins attr addrlen wt timeval successful remote perhaps ordering optionally legacy invokes
	handlers filename far deal concrete assist zone union ts semantic resolution pairs okay hence
	dragonfly determines conservative canceled branch architectures unlock tmp snapshot scalar override matched loads identify
	gen comparable caused assign asm addressable variant reused prefixes peer overhead neither invoke ietf
	four expr deterministic counters compatible callback algorithms affects wm settings seconds rule occurred obtain
	entirely cos computes benchmark scanned pick cross although usual twice taken suitable say marking
	hint definitions cost vita statements sqrt satisfy runnable requirement removing nuova md hand fake
	success strictly sigpanic seems saved purpose plain newly nanoseconds item initializes incorrect immediate fill
	extract ever codes chosen virtual tested serve purposes positions odd mknyszek mach lengths independent
	implies connect scavenger safely printf practice observe layout disk consistency android workers tx ticket
	term simm shutdown secure req reach interpreted increment hit efficient ctx wrap tracer technologies
	swept reverse quote lucent incoming hook groups dll determined desired alloc void tries transaction
	thing terzarima stringer storage spinning specifically reached problems presence portion literals ignoring generally fs
	dirfd validate streams sp recursively permitted identity describing contention comes chan arithmetic applications aix
	worth unnecessary transitive strip stderr sense pop onto model functionality escapes decide dead conflict
	compilation come causing assuming accurate utils tail profiles labels huge flow figure cap similarly
	replaces refers purego processed proc physical older newer links individual exe broken analysis advance
	releases period marker exits deferred counts convention careful bugs appended truncate stale shall separator
	rename policy pl pixel indexed gofmt fact expensive expand creation compared cleared themselves terminated
	stmt several obtained fk eventually dist discarded contained actions servers seq responses rejected recent
	properties prepare palette ordinary newlines magic infinite distinct deleted cpu bin auto weak truncated
	sweeping sh separately seek resource referenced recover panicking ordered opens opening minimal mechanism malformed
	learn embed computing anonymous trailer tab stdin states samples rounded pipeline multiplication latter incompatible
	entropy cookies buildmode zeroed utilization unreachable unexpected trim trampoline symbolic resources remain released plaintext
	mu locking generating frees critical contexts composite children candidate who txt transform throw task
	sanity retry regions power overwrite overlapped opened observed increase hexadecimal exiting elsewhere elem defaults
	bubble alternative wasmimport typedef trailers specification sequences room revision respective rare pruned primary pdf
	modulus modes inner implicitly ignores gov exclude ctxt const url unset taking ret resets
	payload mp manually lhs jsontext inserted indent fractional fault declare configured completely collected came
	builder arenas api accepted white visible upgrade std slightly proto printer preempted ourselves moved
	moment maintain libraries letters increasing effort converting computation catch approximation align syscalls subset segments
	scavenge restriction responsible pad nowritebarrier mspan mksyscall lstat lost illegal haven fewer ending documented
	correspond consumes columns clang choose black assembler approach xt vector title third stub slots
	profiler prepared ownership owned metrics lookups logging kill inconsistent formed encodings discard detection cmp
	web validation unspecified turns transitions successive sources sorts serialized rely protocols mostly meant highest
	google flight encryption describe consists calculate waits subtract stable retrieves respectively reserve remember quotes
	preserved notes instances fragment expanded distinguish contrast components chunked unfortunately transfer traces soon sn
	rounds responsibility recursion puts proper nonce lets insensitive indices hasn hardware getting filled distribute
	dependent contiguous chdir anymore answer almost ways updating statistics reloc reg pix modulo invocation
	inverse implementing images happened fraction effective compressed bottom blob bind alternate acts whatever variants
	tracking startup setup serves sender rtype racing pixels permits outputs largest intel importer granted
	goes effectively edge conversions ask addend abstract timespec symlinks suite sockets skips shorter sensitive
	scratch rs repeated recently preemptible pp plt person pause nice mappings limits levels iterate
	intermediate impossible filepath factor ergonomic display digest constructed char batch backing wire vendored tile
	tagged scheduling retain ratio races quickly prone post overall marshaler lowercase knows grab emitted
	edit ecdh dummy drivers dn credit colon undo typed temporarily strict simultaneously sentinel schedule
	potential optimized indicated identified height forces flushed elliptic easier breaks breaking asan abort tidy
	succeeded skipped sd remains publish prog populate people lazily guarantees finally draft cryptographic convenience
	cd benchmarks attrs alone allowing your yield weight verifier timestamp sysctl succeeds steps sql
	splice smallest situation scavenging ring respect resolves res pruning protected populates ns lot items
	invariants inferred gs finite embedding dup connected completes compiles closure cancellation ambiguous trivial tcp
	subprocess steal splits shell replacements postconditions polynomial plugin password opts opcode minor metric measure
	inst div curves constructs coefficients bufio aware assists appendix acquired unify sufficient specials simplified
	series reduction receives parenthesized overrides overlay notify necessarily manual family dropped descriptors clears applying
	ahead wide unlikely triggered terminating sums somewhat silently shows reasonable rat quite operator obtaining
	msan languages join inlining indented feature failures dd cephes cdefs bother bigger verification threshold
	terminate terminal storing sig selection recognize preempt pivot norace mkerrors marshaled limitation leaves keeps
	keeping indexes fcntl expansion excluded especially dynamically conf combination assignable arbitrarily zeroes wrapping tracks
	str selects salt routines redundant redirects pull preconditions precise pointing peek mkdir introduce hang
	forwarded floats chmod charge aliasing acceptable worst worry upon units uninitialized spent slashes saves
	rev resolving repeat refs product println pacer native nanotime mips logs logical latency invoking
	insertion godebug exited enforce encapsulation differs differently differ defers consecutive comparing coded authentication appending
	aliases adjusted accounting wasn umask tells stopping statically sorting sees seem searches scavenged risk
	representable rank preferred places linear jump importing historical gzip finalizers filesystem extremely encrypt disables
	delimiter crashes console concurrency completion compiling classes caches backwards arrange wrappers unpruned timing synchronize
	surrogate subdirectory sendfile reduced quotient patch operators lifetime keyword iterations illumos idea hashed failing
	easily draw dedicated boundaries async upload unwinding recording placed nest moduledata mkpost instantiation hostname
	forms dwarf delivered covered couldn bitbucket asynchronous applicable accumulate xxx view variadic typical think
	targets scale rotate revisions recognized readers queues qualified params overflows normalized modifies limiter intentionally
	incorrectly hooks hereby gob forced enter eliminate egid document discussion container conflicts compact clause
	average assignments wants volume symtab strconv spurious sleeping satisfies rlimit resume regression reflection recommended
	pushed preceding permutation particularly moving modload introduced implied ident guard front fits expose effects
	detected design db coordinate construction clock bodies bitmask behind arch accessing vectors unmarshaler substantial
	specialized simulate reaches racy queued proceed preserves predefined packet multiply mul matters mant machines
	loops localhost kinds gvisor goexit fuzz diff denotes cut cc builtin buckets attached accumulated
	whom whenever vitanuova validity uncompressed sublicense strong specs simpler sell satisfied restrictions repeatedly procedure
	prev predeclared persons permissions near invocations infer indentation holdings furnished errorf delim day cr
	compilers calculates bruce behave treats synctest sweeper substrings stubs slog situations semver rw routine
	rfindley recv paper optimize opposed omit namespace mutate moves minimize managed locations inserts helps
	gopher extracts exclusive exceed ellis discards developer deletes deep decrement caching among accesses unread
	synchronous switches signs rhs rewrites requiring providing preference prec overwritten mem man lowest leftmost
	leaked increments idempotent historically finding exchange estimate delimiters decapsulation cfg capture bradfitz auxiliary vs
	username tasks tabs semaphore seal scopes rusage rfc rectangle pretend precomputed preceded pointed park
	padded nesting mipsle minus longest ioctl interesting ideally hack giving getuid fresh framework flushes
	endpoint elf downgrade disallow confusing concatenation collects choice canonicalize boringcrypto backward attempting age adjacent
	abs wall wakeup verified unresolved understand trust theory terminates supplied signer sid shrink shifted
	semicolon readlink perm octet nat minit meaningful macro job identifies grammar ftruncate fstat expired
	evaluated euid equality ed coordinates compares cleanups bytedance bob behaves act acquiring xor writable
	unsafely unification supposed suites spill someone skipping scheduled replacing punctuation printable pread poller outstanding
	mutated multiples multicast leaving lazy layer incremented goarch glob gettimeofday evaluation ensuring enables duplicated
	denominator decrypt credentials comparisons assumption alert accidentally verb varint unwrap unquoted unnamed unlink tiles
	synthetic stripped specifying simplify setpgid retrieve retracted reduces receiving probability pretty outlined originally omits
	moshier mismatch locate laid immutable hide hidden gone glibc folding fills exercise entity dropm
	downloaded delayed counting continuation chroot chown cb blog bcmills authority apple alice wanted walks
	visit underflow unblock trip translate trampolines subtree stride site separators scripts routing route reliably
	pwrite prefixed ping optimizations openssl npages naming munmap mheap merged mentioned lang kqueue ints
	inclusive hashing getgid geteuid getegid gamma funcs funcdata former features executables equals divide decl
	correctness conservatively commonly codec chains cgroup cgi bogus bitwise attacks anywhere acquires accuracy writers
	waiter visited unwind universe unescaped strategy stage specially signing rooted relocs rect readable qr
	producing pipes omitempty networks maintains leads involved inject home growing getsockname formula forever fixes
	exceeded essentially erf edges ecdsa distributed die deps de consisting coefficient cleaned bunch brackets
	baz attacker assert addressing wouldn usable uniform sysmon syntactic switching subtraction slower setsockopt retained
	radix pushes pgid overlapping octets obviously notably needing mtime manage mallocgc lose leaks lchown
	jumps interrupt interpret heuristic getsockopt getpid getpeername freeing filtered fds fchown exhausted excluding erroneous
	engine encounters difficult crashing corrupt corner convenient conditional complicated committed circular cert cell canonicalized
	callee author assigns approximate adjustment additionally yields valgrind turned transformer st somewhere significantly rel
	prepares placeholder pclntab parentheses          
`)

// scaleStop is Bleve's English stop list (the analyzer recall uses): query
// words are drawn outside it so that no query is only stop words.
var scaleStop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because
		been before being below between both but by cannot could did do does doing down during each few for from
		further had has have having he her here hers herself him himself his how i if in into is it its itself me
		more most my myself no nor not of off on once only or other ought our ours ourselves out over own same she
		should so some such than that the their theirs them themselves then there these they this those through to
		too under until up very was we were what when where which while who whom why with would you your yours
		yourself yourselves`) {
		scaleStop[w] = true
	}
}

// scaleRare is the i-th rare term: a made-up name (a code name, a host, a
// customer) that no vocabulary word equals and that stems to itself.
func scaleRare(i int) string {
	const cons, vows = "bdfgklmnprstvz", "aeiou"
	var b strings.Builder
	x := uint64(i)*2654435761 + 97
	for k := 0; k < 3; k++ {
		b.WriteByte(cons[x%uint64(len(cons))])
		x /= uint64(len(cons))
		b.WriteByte(vows[x%uint64(len(vows))])
		x /= uint64(len(vows))
	}
	fmt.Fprintf(&b, "x%d", i) // unique, and not an English word
	return b.String()
}

// scaleGen writes deterministic transcript text.
type scaleGen struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	rares int
}

func newScaleGen(messages int, stream uint64) *scaleGen {
	r := rand.New(rand.NewPCG(scaleSeed, stream))
	return &scaleGen{r: r, zipf: rand.NewZipf(r, 1.07, 2, uint64(len(scaleVocab)-1)), rares: max(2000, messages/100)}
}

// message returns one message's text: 10–40 words from a user, 20–80 from
// an assistant, in sentences, with now and then a number, a file path or a
// rare name. plant, when not empty, is put in as well.
func (g *scaleGen) message(user bool, plant string) string {
	words := 10 + g.r.IntN(31)
	if !user {
		words = 20 + g.r.IntN(61)
	}
	var b strings.Builder
	sentence := 0
	for i := 0; i < words; i++ {
		var w string
		switch x := g.r.IntN(1000); {
		case x < 4:
			w = scaleRare(g.r.IntN(g.rares))
		case x < 12:
			w = fmt.Sprint(g.r.IntN(10000))
		case x < 16:
			w = scaleVocab[g.zipf.Uint64()] + "/" + scaleVocab[g.zipf.Uint64()] + ".go"
		default:
			w = scaleVocab[g.zipf.Uint64()]
		}
		if i == words/2 && plant != "" {
			w = plant
		}
		if sentence == 0 {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			w = strings.ToUpper(w[:1]) + w[1:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		sentence++
		if i == words-1 || sentence >= 6 && g.r.IntN(8) == 0 {
			b.WriteByte(".?"[min(1, g.r.IntN(6)/5)])
			sentence = 0
		} else if g.r.IntN(15) == 0 {
			b.WriteByte(',')
		}
	}
	return b.String()
}

// scalePlants are the rare terms planted in the corpus so that every rare
// query has answers: rare term q goes into three messages far apart.
func scalePlants(messages int) map[int]string {
	out := map[int]string{}
	for q := 0; q < 14; q++ {
		for k := 0; k < 3; k++ {
			out[(k*messages)/3+q*7919%max(1, messages/3)] = scaleRare(q)
		}
	}
	return out
}

// scaleQueries are 30 queries: 8 rare names alone, 6 rare names with
// common words, 8 of two or three middling words, 8 questions of common
// words as a person would type them (stop words included).
func scaleQueries() []string {
	r := rand.New(rand.NewPCG(scaleSeed, 99))
	pick := func(lo, hi int) string {
		for {
			w := scaleVocab[lo+r.IntN(hi-lo)]
			if !scaleStop[w] && len(w) > 2 {
				return w
			}
		}
	}
	var qs []string
	for q := 0; q < 8; q++ {
		qs = append(qs, scaleRare(q))
	}
	for q := 8; q < 14; q++ {
		qs = append(qs, fmt.Sprintf("%s %s %s", scaleRare(q), pick(20, 300), pick(20, 300)))
	}
	for q := 0; q < 8; q++ {
		if q%2 == 0 {
			qs = append(qs, pick(100, 1500)+" "+pick(100, 1500))
		} else {
			qs = append(qs, pick(100, 1500)+" "+pick(100, 1500)+" "+pick(300, 3000))
		}
	}
	starts := []string{"how did we fix the", "what was wrong with the", "why does the", "where is the",
		"what did you change in the", "which", "when did the", "how do I"}
	for q := 0; q < 8; q++ {
		qs = append(qs, fmt.Sprintf("%s %s %s", starts[q], pick(5, 80), pick(5, 200)))
	}
	return qs
}

// scaleData describes a generated vault.
type scaleData struct {
	Messages  int   `json:"messages"`
	Sessions  int   `json:"sessions"`
	TextBytes int64 `json:"text_bytes"` // message text only
	FileBytes int64 `json:"file_bytes"` // transcripts/ as memvault wrote it
	root      string
	corpus    string
}

// scaleGenerate writes messages transcript messages into a new vault at
// root, through memvault's own library (sessions of 100 messages, each bound
// to one of 200 threads, 100 sessions a transaction), and the same messages
// as {"id","text"} lines to corpus.
func scaleGenerate(tb testing.TB, root, corpus string, messages int) scaleData {
	tb.Helper()
	v, _, err := vault.Init(root)
	if err != nil {
		tb.Fatal(err)
	}
	cf, err := os.Create(corpus)
	if err != nil {
		tb.Fatal(err)
	}
	cw := bufio.NewWriterSize(cf, 1<<20)
	enc := json.NewEncoder(cw)
	g := newScaleGen(messages, 1)
	plants := scalePlants(messages)
	threads := rand.New(rand.NewPCG(scaleSeed, 2))
	base := time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC)
	sessions := (messages + scaleSessionMsgs - 1) / scaleSessionMsgs
	d := scaleData{Messages: messages, Sessions: sessions, root: root, corpus: corpus}
	start := time.Now()
	for s0 := 0; s0 < sessions; s0 += scaleTxSessions {
		_, err := v.Update(vault.TxOptions{Command: "bench", LockTimeout: benchLockWait}, func(tx *vault.Tx) error {
			for s := s0; s < min(sessions, s0+scaleTxSessions); s++ {
				t := transcript.Ref{Agent: v.Config.Agent, Session: fmt.Sprintf("s%06d", s)}
				ts := base.Add(time.Duration(s) * 37 * time.Minute)
				var msgs []transcript.Message
				for i := 0; i < scaleSessionMsgs && s*scaleSessionMsgs+i < messages; i++ {
					gi := s*scaleSessionMsgs + i
					role := transcript.RoleUser
					if i%2 == 1 {
						role = transcript.RoleAssistant
					}
					m := transcript.Message{ID: fmt.Sprintf("s%06d-m%03d", s, i), TS: ts.Add(time.Duration(i) * 13 * time.Second),
						Role: role, Text: g.message(role == transcript.RoleUser, plants[gi]),
						Source: transcript.Source{Format: transcript.Generic, Line: i + 1}}
					msgs = append(msgs, m)
					d.TextBytes += int64(len(m.Text))
					if err := enc.Encode(struct {
						ID   string `json:"id"`
						Text string `json:"text"`
					}{m.ID, m.Text}); err != nil {
						return err
					}
				}
				if _, _, err := tx.AppendMessages(t, msgs); err != nil {
					return err
				}
				if err := scope.BindSession(tx, t, fmt.Sprintf("project:p%03d", threads.IntN(scaleThreads))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
		if s0%(scaleTxSessions*20) == 0 && s0 > 0 {
			fmt.Fprintf(os.Stderr, "generate: %d/%d sessions, %s\n", s0, sessions, time.Since(start).Round(time.Second))
		}
	}
	if err := cw.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := cf.Close(); err != nil {
		tb.Fatal(err)
	}
	d.FileBytes = dirBytes(tb, filepath.Join(root, "transcripts"))
	return d
}

// scaleVault returns a vault of messages messages and its corpus, made
// afresh in a temporary folder, or copied from MEMVAULT_BENCH_CACHE (and
// generated there first if need be).
func scaleVault(tb testing.TB, messages int) scaleData {
	tb.Helper()
	cache := os.Getenv("MEMVAULT_BENCH_CACHE")
	if cache == "" {
		dir := tb.TempDir()
		return scaleGenerate(tb, filepath.Join(dir, ".memory"), filepath.Join(dir, "corpus.jsonl"), messages)
	}
	src := filepath.Join(cache, fmt.Sprintf("recall-%d", messages))
	var d scaleData
	if data, err := os.ReadFile(filepath.Join(src, "done.json")); err == nil && json.Unmarshal(data, &d) == nil {
		fmt.Fprintf(os.Stderr, "using the vault generated in %s\n", src)
	} else {
		if err := os.RemoveAll(src); err != nil {
			tb.Fatal(err)
		}
		if err := os.MkdirAll(src, 0o755); err != nil {
			tb.Fatal(err)
		}
		d = scaleGenerate(tb, filepath.Join(src, ".memory"), filepath.Join(src, "corpus.jsonl"), messages)
		data, _ := json.Marshal(d)
		if err := os.WriteFile(filepath.Join(src, "done.json"), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	dir := tb.TempDir()
	if out, err := exec.Command("cp", "-a", filepath.Join(src, ".memory"), filepath.Join(src, "corpus.jsonl"), dir).CombinedOutput(); err != nil {
		tb.Fatalf("cp: %v\n%s", err, out)
	}
	d.root, d.corpus = filepath.Join(dir, ".memory"), filepath.Join(dir, "corpus.jsonl")
	return d
}

// scaleAppendTail appends sessions of new messages, through the library,
// until about bytes of transcript are past the index's watermarks.
func scaleAppendTail(tb testing.TB, root string, bytes int64) int64 {
	tb.Helper()
	v, err := vault.Open(root)
	if err != nil {
		tb.Fatal(err)
	}
	before := dirBytes(tb, filepath.Join(root, "transcripts"))
	g := newScaleGen(1, 3)
	base := time.Date(2027, 1, 4, 9, 0, 0, 0, time.UTC)
	for s := 0; dirBytes(tb, filepath.Join(root, "transcripts"))-before < bytes; s++ {
		_, err := v.Update(vault.TxOptions{Command: "bench", LockTimeout: benchLockWait}, func(tx *vault.Tx) error {
			t := transcript.Ref{Agent: v.Config.Agent, Session: fmt.Sprintf("tail%03d", s)}
			var msgs []transcript.Message
			for i := 0; i < scaleSessionMsgs; i++ {
				role := transcript.RoleUser
				if i%2 == 1 {
					role = transcript.RoleAssistant
				}
				msgs = append(msgs, transcript.Message{ID: fmt.Sprintf("tail%03d-m%03d", s, i), TS: base.Add(time.Duration(s*scaleSessionMsgs+i) * time.Minute),
					Role: role, Text: g.message(role == transcript.RoleUser, ""), Source: transcript.Source{Format: transcript.Generic, Line: i + 1}})
			}
			if _, _, err := tx.AppendMessages(t, msgs); err != nil {
				return err
			}
			return scope.BindSession(tx, t, "project:tail")
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return dirBytes(tb, filepath.Join(root, "transcripts")) - before
}

func dirBytes(tb testing.TB, dir string) int64 {
	tb.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			info, err := e.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// fts5Binary builds the FTS5 anchor from its own module (cmd/memvault/bench/fts5).
func fts5Binary(b testing.TB) string {
	b.Helper()
	out := filepath.Join(b.TempDir(), "fts5q")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = "fts5"
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build (cmd/memvault/bench/fts5): %v\n%s", err, msg)
	}
	return out
}

// scaleTimes runs every command of cmds once per round, the rounds one
// after the other, and returns the wall times of each command by its index.
func scaleTimes(b *testing.B, rounds int, cmds func() []*exec.Cmd, okExit func(error) bool) [][]time.Duration {
	b.Helper()
	wall, _ := scaleTimesCPU(b, rounds, cmds, okExit)
	return wall
}

// scaleTimesCPU is scaleTimes with, beside the wall times, the CPU time
// (user and system) of each process, which the machine's load moves less.
func scaleTimesCPU(b *testing.B, rounds int, cmds func() []*exec.Cmd, okExit func(error) bool) (wall, cpu [][]time.Duration) {
	b.Helper()
	for r := 0; r < rounds; r++ {
		for i, cmd := range cmds() {
			cmd.Env = benchEnv()
			start := time.Now()
			out, err := cmd.CombinedOutput()
			if i == len(wall) {
				wall, cpu = append(wall, nil), append(cpu, nil)
			}
			wall[i] = append(wall[i], time.Since(start))
			if cmd.ProcessState != nil {
				cpu[i] = append(cpu[i], cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			}
			if err != nil && (okExit == nil || !okExit(err)) {
				b.Fatalf("%v: %v\n%s", cmd.Args, err, out)
			}
		}
	}
	return wall, cpu
}

// scaleClasses are the kinds of query in scaleQueries, by index.
var scaleClasses = []struct {
	name     string
	from, to int
}{{"rare name", 0, 8}, {"rare + common", 8, 14}, {"middling words", 14, 22}, {"question", 22, 30}}

// flat sorts the times of the commands from..to together.
func flat(byCmd [][]time.Duration, from, to int) []time.Duration {
	var out []time.Duration
	for _, d := range byCmd[from:min(to, len(byCmd))] {
		out = append(out, d...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// byClass is the p50 of each class of query, for the table.
func byClass(byCmd [][]time.Duration) string {
	var parts []string
	for _, c := range scaleClasses {
		parts = append(parts, fmt.Sprintf("%s %.0f", c.name, ms(pct(flat(byCmd, c.from, c.to), 50))))
	}
	return "p50 ms by kind: " + strings.Join(parts, ", ")
}

func pct(durs []time.Duration, p int) time.Duration {
	if len(durs) == 0 {
		return 0
	}
	return durs[min(len(durs)-1, len(durs)*p/100)]
}

type scaleRow struct {
	what, p50, p90, other string
}

// BenchmarkRecallScale builds a vault of MEMVAULT_BENCH_MESSAGES transcript
// messages (default 100,000) and measures, in one run: the index build
// (memvault reindex), recall p50/p90 over 30 queries, recall with a 1 MB
// tail the index has not caught up with, and as anchors grep over the same
// transcript files and SQLite FTS5 over the same messages (build and query).
// MEMVAULT_BENCH_EMBED=1 also times recall with [embed] on a copy of the
// vault (the fake endpoint, its cache filled before any timing),
// interleaved with the lexical recalls; MEMVAULT_BENCH_EMBED_DELAY=20ms
// makes the endpoint take that long to answer each recall's query, as a
// model would. Use -benchtime 1x: each operation
// is already a set of processes.
func BenchmarkRecallScale(b *testing.B) {
	messages := 100000
	if s := os.Getenv("MEMVAULT_BENCH_MESSAGES"); s != "" {
		if _, err := fmt.Sscan(s, &messages); err != nil || messages < scaleSessionMsgs {
			b.Fatalf("MEMVAULT_BENCH_MESSAGES=%q: want a number of messages ≥ %d", s, scaleSessionMsgs)
		}
	}
	rounds := 3
	if s := os.Getenv("MEMVAULT_BENCH_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	bin := memvaultBinary(b)
	fts := fts5Binary(b)
	start := time.Now()
	d := scaleVault(b, messages)
	fmt.Fprintf(os.Stderr, "vault of %d messages (%d sessions, %.1f MB of text, %.1f MB of transcript files) ready in %s\n",
		d.Messages, d.Sessions, mb(d.TextBytes), mb(d.FileBytes), time.Since(start).Round(time.Second))
	queries := scaleQueries()
	db := filepath.Join(filepath.Dir(d.root), "fts5.db")
	var rows []scaleRow
	add := func(what string, durs []time.Duration, other string) {
		rows = append(rows, scaleRow{what, fmt.Sprintf("%.1f ms", ms(pct(durs, 50))), fmt.Sprintf("%.1f ms", ms(pct(durs, 90))), other})
	}

	indexed := false
	b.Run("reindex", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			cmd := exec.Command(bin, "--vault", d.root, "reindex", "--json")
			cmd.Env = benchEnv()
			t0 := time.Now()
			out, err := cmd.Output()
			elapsed := time.Since(t0)
			if err != nil {
				b.Fatalf("reindex: %v\n%s", err, out)
			}
			var rep struct {
				Documents uint64 `json:"documents"`
				Bytes     int64  `json:"bytes"`
			}
			if err := json.Unmarshal(out, &rep); err != nil {
				b.Fatalf("reindex --json: %v\n%s", err, out)
			}
			size := dirBytes(b, filepath.Join(d.root, ".index"))
			b.ReportMetric(elapsed.Seconds(), "s")
			b.ReportMetric(float64(d.Messages)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(mb(rep.Bytes)/elapsed.Seconds(), "MB/s")
			b.ReportMetric(float64(size)/float64(d.TextBytes), "size/text")
			if i == b.N-1 {
				rows = append(rows, scaleRow{"memvault reindex (index build)", "", "",
					fmt.Sprintf("%.1f s, %.0f msgs/s, %.1f MB/s of files, %d docs; index %.0f MB = %.2f× text, %.2f× files",
						elapsed.Seconds(), float64(d.Messages)/elapsed.Seconds(), mb(rep.Bytes)/elapsed.Seconds(), rep.Documents,
						mb(size), float64(size)/float64(d.TextBytes), float64(size)/float64(d.FileBytes))})
			}
		}
		indexed = true
	})
	if !indexed {
		run(b, "", bin, "--vault", d.root, "reindex", "--json")
	}
	// MEMVAULT_BENCH_BASELINE names another memvault binary (say, main's)
	// to compare with in the same run: it indexes its own copy of the
	// vault, and its recalls are timed interleaved with this one's, so
	// the machine's load falls on both alike.
	baseBin, baseRoot := os.Getenv("MEMVAULT_BENCH_BASELINE"), ""
	if baseBin != "" {
		baseRoot = filepath.Join(b.TempDir(), ".memory")
		if out, err := exec.Command("cp", "-a", d.root, baseRoot).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v\n%s", err, out)
		}
		cmd := exec.Command(baseBin, "--vault", baseRoot, "reindex", "--json")
		cmd.Env = benchEnv()
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("baseline reindex: %v\n%s", err, out)
		}
		elapsed := time.Since(t0)
		size := dirBytes(b, filepath.Join(baseRoot, ".index"))
		rows = append(rows, scaleRow{"baseline reindex (" + filepath.Base(baseBin) + ")", "", "",
			fmt.Sprintf("%.1f s; index %.0f MB = %.2f× text", elapsed.Seconds(), mb(size), float64(size)/float64(d.TextBytes))})
	}
	vecRoot, baseVecRoot, vecSrv := "", "", (*embedtest.Server)(nil)
	if os.Getenv("MEMVAULT_BENCH_EMBED") == "1" {
		var row scaleRow
		vecRoot, vecSrv, row = scaleEmbedCopy(b, bin, d.root)
		rows = append(rows, row)
		if baseBin != "" {
			// The baseline's own copy, its cache filled by itself: a cache
			// format it does not read would be embedded again by each of
			// its recalls, and rewritten by each of this build's.
			baseVecRoot = scaleBaselineVectors(b, baseBin, vecRoot)
		}
		if s := os.Getenv("MEMVAULT_BENCH_EMBED_DELAY"); s != "" {
			// A model's own time per query (the fake answers at once).
			d, err := time.ParseDuration(s)
			if err != nil {
				b.Fatalf("MEMVAULT_BENCH_EMBED_DELAY: %v", err)
			}
			vecSrv.SetDelay(d)
			rows = append(rows, scaleRow{"the endpoint's time per query (MEMVAULT_BENCH_EMBED_DELAY)", "", "", d.String()})
		}
	}
	recallCmds := func() []*exec.Cmd {
		var cmds []*exec.Cmd
		for _, q := range queries {
			cmds = append(cmds, exec.Command(bin, "--vault", d.root, "recall", "--all-threads", "--limit", "10", "--json", q))
			if baseBin != "" {
				cmds = append(cmds, exec.Command(baseBin, "--vault", baseRoot, "recall", "--all-threads", "--limit", "10", "--json", q))
			}
			if vecRoot != "" {
				cmds = append(cmds, exec.Command(bin, "--vault", vecRoot, "recall", "--all-threads", "--limit", "10", "--json", q))
			}
			if vecRoot != "" && baseBin != "" { // the baseline on its own copy of the same vectors
				cmds = append(cmds, exec.Command(baseBin, "--vault", baseVecRoot, "recall", "--all-threads", "--limit", "10", "--json", q))
			}
		}
		return cmds
	}
	// split separates this binary's times from the baseline's and from
	// those with [embed] (vec, and the baseline's: baseVec), which
	// recallCmds interleaves per query.
	split := func(byCmd [][]time.Duration) (mine, base, vec, baseVec [][]time.Duration) {
		var order []*[][]time.Duration
		order = append(order, &mine)
		if baseBin != "" {
			order = append(order, &base)
		}
		if vecRoot != "" {
			order = append(order, &vec)
			if baseBin != "" {
				order = append(order, &baseVec)
			}
		}
		for i, d := range byCmd {
			to := order[i%len(order)]
			*to = append(*to, d)
		}
		return mine, base, vec, baseVec
	}
	scaleTimes(b, 1, recallCmds, nil) // warm: page cache, derived caches
	b.Run("recall", func(b *testing.B) {
		var asked int64
		if vecSrv != nil {
			asked = vecSrv.Requests.Load()
		}
		var byCmd, cpuByCmd [][]time.Duration
		for i := 0; i < b.N; i++ {
			byCmd, cpuByCmd = scaleTimesCPU(b, rounds, recallCmds, nil)
		}
		{
			mine, base, vec, baseVec := split(cpuByCmd)
			var parts []string
			for _, side := range []struct {
				name string
				d    [][]time.Duration
			}{{"this build", mine}, {"baseline", base}, {"this build with [embed]", vec}, {"baseline with [embed]", baseVec}} {
				if side.d != nil {
					parts = append(parts, fmt.Sprintf("%s %.1f", side.name, ms(pct(flat(side.d, 0, len(side.d)), 50))))
				}
			}
			rows = append(rows, scaleRow{"recall CPU (user + sys) p50, ms", "", "", strings.Join(parts, "; ")})
		}
		mine, base, vec, baseVec := split(byCmd)
		durs := flat(mine, 0, len(mine))
		b.ReportMetric(ms(pct(durs, 50)), "p50-ms")
		b.ReportMetric(ms(pct(durs, 90)), "p90-ms")
		add("memvault recall --all-threads --limit 10", durs, fmt.Sprintf("%d queries × %d; %s", len(queries), rounds, byClass(mine)))
		if base != nil {
			bd := flat(base, 0, len(base))
			b.ReportMetric(ms(pct(bd, 50)), "base-p50-ms")
			add("baseline recall, interleaved", bd, byClass(base))
		}
		if vec != nil {
			vd := flat(vec, 0, len(vec))
			b.ReportMetric(ms(pct(vd, 50)), "embed-p50-ms")
			b.ReportMetric(ms(pct(vd, 90)), "embed-p90-ms")
			add("memvault recall with [embed] (fake endpoint, cache filled), interleaved", vd,
				fmt.Sprintf("%.1f requests per recall; %s", float64(vecSrv.Requests.Load()-asked)/float64(len(vd)+len(flat(baseVec, 0, len(baseVec)))), byClass(vec)))
		}
		if baseVec != nil {
			bv := flat(baseVec, 0, len(baseVec))
			b.ReportMetric(ms(pct(bv, 50)), "base-embed-p50-ms")
			add("baseline recall with [embed], same cache, interleaved", bv, byClass(baseVec))
		}
	})
	b.Run("grep", func(b *testing.B) {
		grepCmds := func() []*exec.Cmd {
			var cmds []*exec.Cmd
			for _, q := range queries {
				args := []string{"-rli"}
				for _, w := range strings.Fields(q) {
					if !scaleStop[w] {
						args = append(args, "-e", w)
					}
				}
				cmd := exec.Command("grep", append(args, "transcripts/")...)
				cmd.Dir = d.root
				cmds = append(cmds, cmd)
			}
			return cmds
		}
		noMatch := func(err error) bool { // grep exits 1 when nothing matched
			e, ok := err.(*exec.ExitError)
			return ok && e.ExitCode() == 1
		}
		scaleTimes(b, 1, grepCmds, noMatch)
		var byCmd [][]time.Duration
		for i := 0; i < b.N; i++ {
			byCmd = scaleTimes(b, rounds, grepCmds, noMatch)
		}
		durs := flat(byCmd, 0, len(byCmd))
		b.ReportMetric(ms(pct(durs, 50)), "p50-ms")
		b.ReportMetric(ms(pct(durs, 90)), "p90-ms")
		add("grep -rli -e W… transcripts/ (anchor)", durs, "files only, no ranking; "+byClass(byCmd))
	})
	built := false
	b.Run("fts5-build", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			out, err := exec.Command(fts, "build", db, d.corpus).CombinedOutput()
			elapsed := time.Since(t0)
			if err != nil {
				b.Fatalf("fts5q build: %v\n%s", err, out)
			}
			info, err := os.Stat(db)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(elapsed.Seconds(), "s")
			b.ReportMetric(float64(d.Messages)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(mb(d.TextBytes)/elapsed.Seconds(), "MB/s")
			b.ReportMetric(float64(info.Size())/float64(d.TextBytes), "size/text")
			if i == b.N-1 {
				rows = append(rows, scaleRow{"SQLite FTS5 build (anchor)", "", "",
					fmt.Sprintf("%.1f s, %.0f msgs/s, %.1f MB/s of text; db %.0f MB = %.2f× text",
						elapsed.Seconds(), float64(d.Messages)/elapsed.Seconds(), mb(d.TextBytes)/elapsed.Seconds(),
						mb(info.Size()), float64(info.Size())/float64(d.TextBytes))})
			}
		}
		built = true
	})
	if !built {
		run(b, "", fts, "build", db, d.corpus)
	}
	b.Run("fts5-query", func(b *testing.B) {
		ftsCmds := func() []*exec.Cmd {
			var cmds []*exec.Cmd
			for _, q := range queries {
				cmds = append(cmds, exec.Command(fts, db, q))
			}
			return cmds
		}
		scaleTimes(b, 1, ftsCmds, nil)
		var byCmd [][]time.Duration
		for i := 0; i < b.N; i++ {
			byCmd = scaleTimes(b, rounds, ftsCmds, nil)
		}
		durs := flat(byCmd, 0, len(byCmd))
		b.ReportMetric(ms(pct(durs, 50)), "p50-ms")
		b.ReportMetric(ms(pct(durs, 90)), "p90-ms")
		add("fts5q DB QUERY, top 10 by bm25 (anchor)", durs, byClass(byCmd))
	})
	tail := scaleAppendTail(b, d.root, scaleTailBytes)
	scaleTimes(b, 1, recallCmds, nil)
	b.Run("recall-tail", func(b *testing.B) {
		var byCmd [][]time.Duration
		for i := 0; i < b.N; i++ {
			byCmd = scaleTimes(b, rounds, recallCmds, nil)
		}
		mine, _, _, _ := split(byCmd)
		durs := flat(mine, 0, len(mine))
		b.ReportMetric(ms(pct(durs, 50)), "p50-ms")
		b.ReportMetric(ms(pct(durs, 90)), "p90-ms")
		b.ReportMetric(mb(tail), "tail-MB")
		add("memvault recall, with an unindexed tail", durs, fmt.Sprintf("tail of %.2f MB of transcript files; %s", mb(tail), byClass(mine)))
	})

	var sb strings.Builder
	fmt.Fprintf(&sb, "\nRetrieval at scale: %d messages, %d sessions, %.1f MB of text, %.1f MB of transcript files\n\n",
		d.Messages, d.Sessions, mb(d.TextBytes), mb(d.FileBytes))
	fmt.Fprintf(&sb, "| what | p50 | p90 | notes |\n| --- | --- | --- | --- |\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "| %s | %s | %s | %s |\n", r.what, r.p50, r.p90, r.other)
	}
	fmt.Print(sb.String())
}

// scaleEmbedCopy copies the indexed vault and gives the copy an [embed]
// table pointing at the fake endpoint (vault/embed/embedtest, 768
// dimensions), then fills its vector cache with a reindex, so that the
// recalls timed after it find every vector cached and only embed the
// query. The endpoint runs in the test process for the rest of the
// benchmark. It returns the copy, the endpoint and a row with the
// reindex's time.
func scaleEmbedCopy(b *testing.B, bin, root string) (string, *embedtest.Server, scaleRow) {
	b.Helper()
	srv := embedtest.New(768)
	b.Cleanup(srv.Close)
	vecRoot := filepath.Join(b.TempDir(), ".memory")
	if out, err := exec.Command("cp", "-a", root, vecRoot).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v\n%s", err, out)
	}
	embedTable(b, vecRoot, srv)
	cmd := exec.Command(bin, "--vault", vecRoot, "reindex")
	cmd.Env = benchEnv()
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	elapsed := time.Since(t0)
	if err != nil || srv.Requests.Load() == 0 {
		b.Fatalf("reindex with [embed]: %v, %d requests\n%s", err, srv.Requests.Load(), out)
	}
	return vecRoot, srv, scaleRow{"memvault reindex with [embed] (fills the vector cache)", "", "",
		fmt.Sprintf("%.1f s, %d requests to the fake endpoint; %s", elapsed.Seconds(), srv.Requests.Load(), firstLine(out))}
}

// embedTable appends to the vault's memvault.toml an [embed] table
// pointing at the fake endpoint srv.
func embedTable(tb testing.TB, root string, srv *embedtest.Server) {
	tb.Helper()
	cfg := filepath.Join(root, "memvault.toml")
	old, err := os.ReadFile(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	table := "\n[embed]\nurl = \"" + srv.URL() + "\"\nmodel = \"fake\"\ntimeout = \"30s\"\n"
	if err := os.WriteFile(cfg, append(old, table...), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// scaleBaselineVectors copies vecRoot without its vector cache, and fills
// the copy's with the baseline binary's reindex.
func scaleBaselineVectors(b *testing.B, baseBin, vecRoot string) string {
	b.Helper()
	root := filepath.Join(b.TempDir(), ".memory")
	if out, err := exec.Command("cp", "-a", vecRoot, root).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v\n%s", err, out)
	}
	os.Remove(filepath.Join(root, ".state", "embed-vectors.bin"))
	cmd := exec.Command(baseBin, "--vault", root, "reindex")
	cmd.Env = benchEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("baseline reindex with [embed]: %v\n%s", err, out)
	}
	return root
}

func mb(n int64) float64 { return math.Round(float64(n)/(1<<20)*100) / 100 }

// TestRecallScaleProfile profiles vault.Recall in-process over the
// benchmark's queries on the cached vault of MEMVAULT_BENCH_MESSAGES
// messages, and writes a CPU profile to MEMVAULT_BENCH_PROFILE. Skipped
// without that variable. MEMVAULT_BENCH_PROFILE_TAIL=1 appends the 1 MB
// unindexed tail first.
func TestRecallScaleProfile(t *testing.T) {
	out := os.Getenv("MEMVAULT_BENCH_PROFILE")
	if out == "" {
		t.Skip("set MEMVAULT_BENCH_PROFILE=FILE (and MEMVAULT_BENCH_CACHE) to profile recall at scale")
	}
	messages := 100000
	if s := os.Getenv("MEMVAULT_BENCH_MESSAGES"); s != "" {
		fmt.Sscan(s, &messages)
	}
	d := scaleVault(t, messages)
	v, err := vault.Open(d.root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recall.Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("MEMVAULT_BENCH_PROFILE_TAIL") != "" {
		tail := scaleAppendTail(t, d.root, scaleTailBytes)
		t.Logf("appended a tail of %.2f MB the index has not caught up with", mb(tail))
		if v, err = vault.Open(d.root); err != nil {
			t.Fatal(err)
		}
	}
	if os.Getenv("MEMVAULT_BENCH_EMBED") == "1" {
		v = scaleProfileEmbed(t, d.root)
	}
	queries := scaleQueries()
	recall := func(q string) {
		if _, err := recall.Recall(v, recall.RecallOptions{Query: q, Agent: v.Config.Agent, AllThreads: true, Limit: 10}); err != nil {
			t.Fatalf("recall %q: %v", q, err)
		}
	}
	for _, q := range queries {
		recall(q) // warm
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	byQuery := make([][]time.Duration, len(queries))
	for r := 0; r < 3; r++ {
		for i, q := range queries {
			t0 := time.Now()
			recall(q)
			byQuery[i] = append(byQuery[i], time.Since(t0))
		}
	}
	pprof.StopCPUProfile()
	durs := flat(byQuery, 0, len(byQuery))
	t.Logf("in-process recall over %d queries × 3: p50 %.1f ms, p90 %.1f ms; %s; profile in %s",
		len(queries), ms(pct(durs, 50)), ms(pct(durs, 90)), byClass(byQuery), out)
}

// scaleProfileEmbed gives the vault of TestRecallScaleProfile an [embed]
// table (the fake endpoint, 768 dimensions) and fills its vector cache,
// so that the profile is of recall with vectors.
func scaleProfileEmbed(t *testing.T, root string) *vault.Vault {
	srv := embedtest.New(768)
	t.Cleanup(srv.Close)
	embedTable(t, root, srv)
	v, err := vault.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := recall.CatchUpEmbeddings(context.Background(), v, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("vector cache filled: %+v", rep)
	return v
}

// benchLockWait is how long the builders of the benchmark vaults wait for
// the vault lock: their writes start the automatic pack (a detached
// `git gc --auto` that holds the lock while it runs), which on a vault of
// a hundred thousand messages takes longer than a writer's default 10 s.
const benchLockWait = time.Hour
