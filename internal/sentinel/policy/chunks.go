package policy

import (
	"fmt"
	"slices"
	"time"

	"github.com/raven-agent/raven/internal/statefile"
)

// The ledger is stored in chunk sections of the state file, so a peer's
// fire rewrites one small section and a reader decodes only the sections
// whose revision moved: fires by the hour they happened (a ring of
// fireSlots sections, "policy.fires.N"), verdicts by the day
// ("policy.outcomes.N"), and the "policy" section itself keeps only the
// scalars. When a peer only appended fires (and trimmed old ones), the new
// fires are indexed one by one instead of re-indexing the ledger.
//
// The ring is a little longer than the retention, so the live fires of two
// different hours never share a section; if a clock jump makes them, they
// share it and everything still loads (chunks are merged and sorted).

// formatChunked marks the "policy" section of this layout; the section of
// the older layout held every fire and verdict and has no format.
const formatChunked = 2

const (
	fireSlots    = int(fireRetention/time.Hour) + 2
	outcomeSlots = int(outcomeWindow/(24*time.Hour)) + 2
)

// head is the "policy" section: the scalars, or in the older layout (no
// format) the whole ledger.
type head struct {
	Format        int          `json:"format,omitempty"`
	Fires         []fireRec    `json:"fires,omitempty"`
	Outcomes      []outcomeRec `json:"outcomes,omitempty"`
	LastDismissal time.Time    `json:"last_dismissal,omitzero"`
	Multiplier    float64      `json:"multiplier,omitempty"`
}

func fireSection(slot int) string    { return fmt.Sprintf("%s.fires.%d", StateSection, slot) }
func outcomeSection(slot int) string { return fmt.Sprintf("%s.outcomes.%d", StateSection, slot) }

func fireSlot(f *fireRec) int { return ringSlot(f.At.Unix(), 3600, fireSlots) }

func outcomeSlot(o *outcomeRec) int { return ringSlot(o.At.Unix(), 86400, outcomeSlots) }

func ringSlot(unix, width int64, slots int) int {
	q := unix / width
	if unix%width < 0 {
		q--
	}
	return int(((q % int64(slots)) + int64(slots)) % int64(slots))
}

func sameOutcome(a, b *outcomeRec) bool {
	return a.ID == b.ID && a.At.Equal(b.At) && a.Topic == b.Topic && a.Verdict == b.Verdict &&
		a.Priority == b.Priority && a.Hour == b.Hour
}

func sameScalars(a, b head) bool {
	return a.Format == b.Format && a.LastDismissal.Equal(b.LastDismissal) && a.Multiplier == b.Multiplier
}

// stored is what this process knows the file holds: per section, the
// revision it reflects and the records it decoded or wrote there.
type stored struct {
	revs     map[string]uint64
	fires    [][]fireRec    // by fire slot
	outcomes [][]outcomeRec // by outcome slot
	head     head           // scalars only
	names    []string       // fire then outcome section names, built once
	seen     uint64         // tx.Revision of the file last loaded or saved
	// rewrite makes the next write put every section: the file holds the
	// older layout, or nothing.
	rewrite bool
}

func newStored() *stored {
	s := &stored{
		revs:     map[string]uint64{},
		fires:    make([][]fireRec, fireSlots),
		outcomes: make([][]outcomeRec, outcomeSlots),
		rewrite:  true,
	}
	for i := range fireSlots {
		s.names = append(s.names, fireSection(i))
	}
	for i := range outcomeSlots {
		s.names = append(s.names, outcomeSection(i))
	}
	return s
}

// load brings the ledger up to date with tx, decoding only the sections
// whose revision changed. An absent "policy" section (a fresh or
// moved-aside file) keeps what the ledger holds; the next write persists it.
func (s *stored) load(tx *statefile.Tx, l *ledger, cfg *Config, now time.Time) error {
	// The hot path: Check hydrates before every decision, and most of the
	// time no section of the file moved.
	if r := tx.Revision(); r == s.seen && r != 0 {
		return nil
	}
	if err := s.loadSections(tx, l, cfg, now); err != nil {
		return err
	}
	s.seen = tx.Revision()
	return nil
}

func (s *stored) loadSections(tx *statefile.Tx, l *ledger, cfg *Config, now time.Time) error {
	hrev := tx.Rev(StateSection)
	if hrev == 0 {
		s.rewrite = true
		return nil
	}
	headChanged := hrev != s.revs[StateSection]
	var changed []int
	for i, name := range s.names {
		if tx.Rev(name) != s.revs[name] {
			changed = append(changed, i)
		}
	}
	if !headChanged && len(changed) == 0 {
		return nil
	}
	first := s.revs[StateSection] == 0
	if headChanged {
		var h head
		if _, err := tx.Get(StateSection, &h); err != nil {
			return err
		}
		s.revs[StateSection] = hrev
		if h.Format < formatChunked {
			// The older layout: everything in one section, decoded once;
			// the next write moves it into chunks.
			l.rebuild(persisted{Fires: h.Fires, Outcomes: h.Outcomes, LastDismissal: h.LastDismissal, Multiplier: h.Multiplier}, cfg, now)
			s.resetFrom(tx)
			s.rewrite = true
			return nil
		}
		s.head = head{Format: h.Format, LastDismissal: h.LastDismissal, Multiplier: h.Multiplier}
	}
	// Decode the changed chunks, noting whether the change is only fires
	// appended (and old ones trimmed from a chunk's front).
	var added []fireRec
	appendOnly, trimmed, outcomesChanged := true, false, false
	for _, i := range changed {
		name := s.names[i]
		if i < fireSlots {
			var fs []fireRec
			if _, err := tx.Get(name, &fs); err != nil {
				return err
			}
			if n, ok := appended(s.fires[i], fs); ok {
				added = append(added, fs[len(fs)-n:]...)
				trimmed = trimmed || len(fs)-n < len(s.fires[i])
			} else {
				appendOnly = false
			}
			s.fires[i] = fs
		} else {
			var outs []outcomeRec
			if _, err := tx.Get(name, &outs); err != nil {
				return err
			}
			s.outcomes[i-fireSlots] = outs
			outcomesChanged = true
		}
		s.revs[name] = tx.Rev(name)
	}
	s.rewrite = false
	// Trimming is left to this process's own prune, which runs as the new
	// fires are indexed: with none, re-index.
	if appendOnly && !first && (len(added) > 0 || !trimmed) {
		slices.SortStableFunc(added, func(a, b fireRec) int { return a.At.Compare(b.At) })
		for _, f := range added {
			l.addFire(f, cfg, now)
		}
		if outcomesChanged {
			// A verdict changes only what verdicts index; the fires'
			// index (the bulk of the ledger) stays.
			l.setOutcomes(s.allOutcomes(), cfg, now)
		}
		l.multiplier = s.head.Multiplier
		if l.multiplier <= 0 {
			l.multiplier = 1
		}
		l.lastDismissal = max(l.lastDismissal, s.head.LastDismissal.UnixNano())
		return nil
	}
	l.rebuild(s.persisted(), cfg, now)
	return nil
}

// appended reports whether next is old with some records trimmed from the
// front and n new ones at the end.
func appended(old, next []fireRec) (n int, ok bool) {
	// The first record of next that old holds tells how much was trimmed.
	if len(old) == 0 || len(next) == 0 {
		return len(next), true // a new chunk, or one trimmed away
	}
	k := 0
	if len(next) > 0 {
		k = slices.IndexFunc(old, func(f fireRec) bool { return sameFire(&f, &next[0]) })
		if k < 0 {
			// Nothing of old is left: trimmed away entirely, which age
			// or the cap only do to records older than every new one.
			if old[len(old)-1].At.After(next[0].At) {
				return 0, false
			}
			return len(next), true
		}
	}
	keep := old[min(k, len(old)):]
	if len(keep) > len(next) {
		return 0, false
	}
	for i := range keep {
		if !sameFire(&keep[i], &next[i]) {
			return 0, false
		}
	}
	return len(next) - len(keep), true
}

func sameFire(a, b *fireRec) bool {
	return a.ID == b.ID && a.At.Equal(b.At) && a.Hash == b.Hash && a.Topic == b.Topic
}

// persisted merges the chunks into the ledger's persisted form.
// allOutcomes are the outcome chunks' records, in slot order.
func (s *stored) allOutcomes() []outcomeRec {
	var out []outcomeRec
	for _, c := range s.outcomes {
		out = append(out, c...)
	}
	return out
}

func (s *stored) persisted() persisted {
	n := 0
	for _, c := range s.fires {
		n += len(c)
	}
	st := persisted{Fires: make([]fireRec, 0, n), LastDismissal: s.head.LastDismissal, Multiplier: s.head.Multiplier}
	for _, c := range s.fires {
		st.Fires = append(st.Fires, c...)
	}
	for _, c := range s.outcomes {
		st.Outcomes = append(st.Outcomes, c...)
	}
	// Chunks are in slot order, not time order: rebuild sorts stably, and
	// each chunk is in time order already.
	return st
}

// resetFrom makes the chunk caches match nothing on disk after a load of
// the older layout: revisions as tx has them, contents empty, so the next
// write puts every chunk.
func (s *stored) resetFrom(tx *statefile.Tx) {
	for i, name := range s.names {
		s.revs[name] = tx.Rev(name)
		if i < fireSlots {
			s.fires[i] = nil
		} else {
			s.outcomes[i-fireSlots] = nil
		}
	}
	s.head = head{}
}

// save puts the sections whose content differs from what the file holds.
func (s *stored) save(tx *statefile.Tx, l *ledger) error {
	p := l.persist()
	fires := make([][]fireRec, fireSlots)
	for i := range p.Fires {
		k := fireSlot(&p.Fires[i])
		fires[k] = append(fires[k], p.Fires[i])
	}
	outs := make([][]outcomeRec, outcomeSlots)
	for i := range p.Outcomes {
		k := outcomeSlot(&p.Outcomes[i])
		outs[k] = append(outs[k], p.Outcomes[i])
	}
	// put reports whether a section must be written: its content moved,
	// or a full rewrite finds it on disk or non-empty.
	put := func(name string, n int, same bool) bool {
		if s.rewrite {
			return n > 0 || tx.Rev(name) != 0
		}
		return !same
	}
	for k := range fires {
		if !put(s.names[k], len(fires[k]), slices.EqualFunc(fires[k], s.fires[k], func(a, b fireRec) bool { return sameFire(&a, &b) })) {
			continue
		}
		c := fires[k]
		if c == nil {
			c = []fireRec{}
		}
		if err := tx.Put(s.names[k], c); err != nil {
			return err
		}
		s.fires[k] = fires[k]
		s.revs[s.names[k]] = tx.Rev(s.names[k])
	}
	for k := range outs {
		name := s.names[fireSlots+k]
		if !put(name, len(outs[k]), slices.EqualFunc(outs[k], s.outcomes[k], func(a, b outcomeRec) bool { return sameOutcome(&a, &b) })) {
			continue
		}
		c := outs[k]
		if c == nil {
			c = []outcomeRec{}
		}
		if err := tx.Put(name, c); err != nil {
			return err
		}
		s.outcomes[k] = outs[k]
		s.revs[name] = tx.Rev(name)
	}
	h := head{Format: formatChunked, LastDismissal: p.LastDismissal, Multiplier: p.Multiplier}
	if s.rewrite || !sameScalars(h, s.head) {
		if err := tx.Put(StateSection, h); err != nil {
			return err
		}
		s.head = h
		s.revs[StateSection] = tx.Rev(StateSection)
	}
	s.rewrite = false
	s.seen = tx.Revision()
	return nil
}

// StoredFire is one fire as the ledger in a state file holds it.
type StoredFire struct {
	ID      string
	At      time.Time
	Action  string
	Session string
	Topic   string
}

// StoredFires returns the fires the state file behind tx holds, oldest
// first, in either layout: for status output and tests, which must not
// depend on how the ledger is split into sections.
func StoredFires(tx *statefile.Tx) ([]StoredFire, error) {
	var h head
	if _, err := tx.Get(StateSection, &h); err != nil {
		return nil, err
	}
	fires := h.Fires
	if h.Format >= formatChunked {
		for i := range fireSlots {
			var c []fireRec
			if _, err := tx.Get(fireSection(i), &c); err != nil {
				return nil, err
			}
			fires = append(fires, c...)
		}
	}
	slices.SortStableFunc(fires, func(a, b fireRec) int { return a.At.Compare(b.At) })
	out := make([]StoredFire, len(fires))
	for i, f := range fires {
		out[i] = StoredFire{ID: f.ID, At: f.At, Action: f.Action, Session: f.Session, Topic: f.Topic}
	}
	return out, nil
}
