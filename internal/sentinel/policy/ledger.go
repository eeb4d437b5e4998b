package policy

import (
	"slices"
	"sort"
	"time"
)

// The ledger is persisted as plain records (fires and verdicts) and indexed
// in memory into sorted time slices and hash-keyed maps, so every Check is a
// few binary searches and map lookups regardless of ledger length.

const (
	week          = 7 * 24 * time.Hour
	fireRetention = week + 24*time.Hour
	outcomeWindow = 30 * 24 * time.Hour
	pruneMapsOver = 4096
	sourceCron    = "cron"
	// sourceAnswer marks a fire that answered a menu (Request.Answer): it
	// counts toward the day and hour quotas and the dedup, not toward the
	// session cooldown or the topic quotas.
	sourceAnswer = "answer"
	actionCron   = "cron"
)

type fireRec struct {
	ID       string    `json:"id"`
	At       time.Time `json:"at"`
	Action   string    `json:"action"`
	Session  string    `json:"session,omitempty"`
	Also     []string  `json:"also_sessions,omitempty"`
	Topic    string    `json:"topic"`
	Hash     uint64    `json:"hash"`
	Priority Priority  `json:"priority,omitempty"`
	Source   string    `json:"source,omitempty"`
}

type outcomeRec struct {
	ID       string    `json:"id,omitempty"`
	At       time.Time `json:"at"`
	Topic    string    `json:"topic"`
	Verdict  string    `json:"verdict"`
	Priority Priority  `json:"priority,omitempty"`
	Hour     int       `json:"hour"` // local hour the nudge was delivered
}

// persisted is the "policy" section of state.json.
type persisted struct {
	Fires         []fireRec    `json:"fires"`
	Outcomes      []outcomeRec `json:"outcomes"`
	LastDismissal time.Time    `json:"last_dismissal,omitzero"`
	Multiplier    float64      `json:"multiplier,omitempty"`
}

type rateCount struct{ acc, dis int }

func (r rateCount) samples() int { return r.acc + r.dis }

func (r rateCount) rate() float64 {
	if r.samples() == 0 {
		return 0
	}
	return float64(r.acc) / float64(r.samples())
}

type reject struct {
	at int64
	w  float64
}

type topicState struct {
	tag           string
	fires         []int64 // sorted, all sources
	lastCron      int64
	lastFire      int64
	cronFires     int
	verdicts      rateCount
	rejects       []reject
	lastDismissed int64
}

type ledger struct {
	fires         []fireRec
	outcomes      []outcomeRec
	nudgeTimes    []int64
	spawnTimes    []int64
	sessions      map[uint64]int64
	dedup         map[uint64]int64
	topics        map[uint64]*topicState
	hours         [24]rateCount
	high          rateCount
	lastDismissal int64
	multiplier    float64
	mapLimit      int
}

func newLedger() *ledger {
	l := &ledger{multiplier: 1}
	l.resetIndex()
	return l
}

func (l *ledger) resetIndex() {
	l.nudgeTimes = l.nudgeTimes[:0]
	l.spawnTimes = l.spawnTimes[:0]
	l.sessions = map[uint64]int64{}
	l.dedup = map[uint64]int64{}
	l.topics = map[uint64]*topicState{}
	l.hours = [24]rateCount{}
	l.high = rateCount{}
	l.lastDismissal = 0
	l.mapLimit = pruneMapsOver
}

func (l *ledger) topic(tag string) *topicState {
	h := hashString(tag)
	ts := l.topics[h]
	if ts == nil {
		ts = &topicState{tag: tag}
		l.topics[h] = ts
	}
	return ts
}

func insertSorted(s []int64, v int64) []int64 {
	if n := len(s); n == 0 || s[n-1] <= v {
		return append(s, v)
	}
	i, _ := slices.BinarySearch(s, v)
	return slices.Insert(s, i, v)
}

// countSince counts sorted times >= since.
func countSince(s []int64, since int64) int {
	i, _ := slices.BinarySearch(s, since)
	return len(s) - i
}

func (l *ledger) indexFire(f fireRec) {
	at := f.At.UnixNano()
	switch {
	case f.Source == sourceCron:
	case f.Action == ActionSpawn:
		l.spawnTimes = insertSorted(l.spawnTimes, at)
	default:
		l.nudgeTimes = insertSorted(l.nudgeTimes, at)
		if f.Source != sourceAnswer {
			l.stampSession(f.Session, at)
			for _, s := range f.Also {
				l.stampSession(s, at)
			}
		}
	}
	if at > l.dedup[f.Hash] {
		l.dedup[f.Hash] = at
	}
	if f.Source == sourceAnswer {
		return
	}
	ts := l.topic(f.Topic)
	ts.fires = insertSorted(ts.fires, at)
	ts.lastFire = max(ts.lastFire, at)
	if f.Source == sourceCron {
		ts.lastCron = max(ts.lastCron, at)
		ts.cronFires++
	}
}

func (l *ledger) stampSession(session string, at int64) {
	if session == "" {
		return
	}
	if h := hashString(session); at > l.sessions[h] {
		l.sessions[h] = at
	}
}

func (l *ledger) indexOutcome(o outcomeRec, cfg *Config) {
	at := o.At.UnixNano()
	ts := l.topic(o.Topic)
	hour := o.Hour
	if hour < 0 || hour > 23 {
		hour = 0
	}
	switch o.Verdict {
	case VerdictAccepted:
		ts.verdicts.acc++
		l.hours[hour].acc++
		if o.Priority == PriorityHigh {
			l.high.acc++
		}
	case VerdictDismissed:
		ts.verdicts.dis++
		l.hours[hour].dis++
		if o.Priority == PriorityHigh {
			l.high.dis++
		}
		l.lastDismissal = max(l.lastDismissal, at)
		ts.lastDismissed = max(ts.lastDismissed, at)
		ts.rejects = append(ts.rejects, reject{at, cfg.TopicRejectWeightDism})
	case VerdictNeutral:
		if cfg.TopicRejectWeightNeutr > 0 {
			ts.rejects = append(ts.rejects, reject{at, cfg.TopicRejectWeightNeutr})
		}
	}
}

// rebuild replaces the ledger with st, dropping what is past retention.
func (l *ledger) rebuild(st persisted, cfg *Config, now time.Time) {
	l.fires = st.Fires
	l.outcomes = st.Outcomes
	sort.SliceStable(l.fires, func(i, j int) bool { return l.fires[i].At.Before(l.fires[j].At) })
	sort.SliceStable(l.outcomes, func(i, j int) bool { return l.outcomes[i].At.Before(l.outcomes[j].At) })
	l.multiplier = st.Multiplier
	if l.multiplier <= 0 {
		l.multiplier = 1
	}
	l.prune(cfg, now)
	l.reindex(cfg)
	l.lastDismissal = max(l.lastDismissal, st.LastDismissal.UnixNano())
}

func (l *ledger) reindex(cfg *Config) {
	l.resetIndex()
	for _, f := range l.fires {
		l.indexFire(f)
	}
	for _, o := range l.outcomes {
		l.indexOutcome(o, cfg)
	}
}

// setOutcomes replaces the verdicts with outs (a peer changed them) and
// rebuilds only what verdicts index — per-topic verdict counts, rejects
// and last dismissals, the hour and high-priority rates, the last
// dismissal — leaving the fires' index as it is.
func (l *ledger) setOutcomes(outs []outcomeRec, cfg *Config, now time.Time) {
	sort.SliceStable(outs, func(i, j int) bool { return outs[i].At.Before(outs[j].At) })
	l.outcomes = outs
	l.pruneOutcomes(cfg, now)
	for _, ts := range l.topics {
		ts.verdicts, ts.rejects, ts.lastDismissed = rateCount{}, ts.rejects[:0], 0
	}
	l.hours, l.high, l.lastDismissal = [24]rateCount{}, rateCount{}, 0
	for _, o := range l.outcomes {
		l.indexOutcome(o, cfg)
	}
}

// pruneOutcomes drops verdicts past the outcome window and beyond the cap.
func (l *ledger) pruneOutcomes(cfg *Config, now time.Time) bool {
	ocut := now.Add(-outcomeWindow)
	j := sort.Search(len(l.outcomes), func(i int) bool { return !l.outcomes[i].At.Before(ocut) })
	if over := len(l.outcomes) - j - cfg.OutcomeCap; over > 0 {
		j += over
	}
	if j > 0 {
		l.outcomes = slices.Delete(l.outcomes, 0, j)
		return true
	}
	return false
}

// prune drops records past retention and beyond the caps; it reports
// whether anything went (the index then needs a rebuild).
func (l *ledger) prune(cfg *Config, now time.Time) bool {
	dropped, outcomes := l.pruneParts(cfg, now)
	return len(dropped) > 0 || outcomes
}

// pruneParts is prune reporting the fires it dropped (the oldest) and
// whether verdicts went too.
func (l *ledger) pruneParts(cfg *Config, now time.Time) (dropped []fireRec, outcomes bool) {
	cut := now.Add(-fireRetention)
	i := sort.Search(len(l.fires), func(i int) bool { return !l.fires[i].At.Before(cut) })
	if over := len(l.fires) - i - cfg.LedgerCap; over > 0 {
		i += over
	}
	if i > 0 {
		dropped = slices.Clone(l.fires[:i])
		l.fires = slices.Delete(l.fires, 0, i)
	}
	outcomes = l.pruneOutcomes(cfg, now)
	return dropped, outcomes
}

// unindexOldest takes the fires prune just dropped out of the index, so a
// ledger at its cap does not re-index 10,000 fires for every new one. The
// dropped fires are the oldest, so every remaining fire is newer: a
// per-key latest time equal to a dropped fire's has no successor and
// goes. It reports false — the caller re-indexes — on anything it cannot
// take out exactly: a tie in time with a remaining fire, or the new fire
// (not indexed yet) among the dropped.
func (l *ledger) unindexOldest(dropped []fireRec, newID string) bool {
	if len(l.fires) > 0 && !l.fires[0].At.After(dropped[len(dropped)-1].At) {
		return false
	}
	popFront := func(s *[]int64, at int64) bool {
		if len(*s) == 0 || (*s)[0] != at {
			return false
		}
		*s = (*s)[1:]
		return true
	}
	unstamp := func(session string, at int64) {
		if session == "" {
			return
		}
		if h := hashString(session); l.sessions[h] == at {
			delete(l.sessions, h)
		}
	}
	for i := range dropped {
		f := &dropped[i]
		if f.ID == newID {
			return false
		}
		at := f.At.UnixNano()
		switch {
		case f.Source == sourceCron:
		case f.Action == ActionSpawn:
			if !popFront(&l.spawnTimes, at) {
				return false
			}
		default:
			if !popFront(&l.nudgeTimes, at) {
				return false
			}
			if f.Source != sourceAnswer {
				unstamp(f.Session, at)
				for _, s := range f.Also {
					unstamp(s, at)
				}
			}
		}
		if l.dedup[f.Hash] == at {
			delete(l.dedup, f.Hash)
		}
		if f.Source == sourceAnswer {
			continue
		}
		ts := l.topics[hashString(f.Topic)]
		if ts == nil || !popFront(&ts.fires, at) {
			return false
		}
		if ts.lastFire == at {
			ts.lastFire = 0
		}
		if f.Source == sourceCron {
			ts.cronFires--
			if ts.lastCron == at {
				ts.lastCron = 0
			}
		}
	}
	return true
}

// addFire appends a fire, keeping the index current without a full rebuild
// unless retention dropped something.
func (l *ledger) addFire(f fireRec, cfg *Config, now time.Time) {
	l.fires = append(l.fires, f)
	if n := len(l.fires); n > 1 && l.fires[n-1].At.Before(l.fires[n-2].At) {
		sort.SliceStable(l.fires, func(i, j int) bool { return l.fires[i].At.Before(l.fires[j].At) })
	}
	dropped, outcomesDropped := l.pruneParts(cfg, now)
	if outcomesDropped || len(dropped) > 0 && !l.unindexOldest(dropped, f.ID) {
		l.reindex(cfg)
		return
	}
	l.indexFire(f)
	if len(l.sessions) > l.mapLimit || len(l.dedup) > l.mapLimit {
		l.pruneMaps(now)
	}
}

// pruneMaps drops session and dedup entries past fire retention (nothing
// can consult them any more) and raises the next pruning threshold so the
// cost stays amortised.
func (l *ledger) pruneMaps(now time.Time) {
	cut := now.Add(-fireRetention).UnixNano()
	for k, at := range l.sessions {
		if at < cut {
			delete(l.sessions, k)
		}
	}
	for k, at := range l.dedup {
		if at < cut {
			delete(l.dedup, k)
		}
	}
	l.mapLimit = max(pruneMapsOver, 2*max(len(l.sessions), len(l.dedup)))
}

// addOutcome records a verdict; a second verdict for the same nudge replaces
// the first (the owner changed their mind) rather than counting twice.
func (l *ledger) addOutcome(o outcomeRec, cfg *Config, now time.Time) {
	replaced := false
	if o.ID != "" {
		for i := range l.outcomes {
			if l.outcomes[i].ID == o.ID {
				l.outcomes = slices.Delete(l.outcomes, i, i+1)
				replaced = true
				break
			}
		}
	}
	l.outcomes = append(l.outcomes, o)
	if l.prune(cfg, now) || replaced {
		l.reindex(cfg)
		return
	}
	l.indexOutcome(o, cfg)
}

func (l *ledger) findFire(id string) (fireRec, bool) {
	for i := len(l.fires) - 1; i >= 0; i-- {
		if l.fires[i].ID == id {
			return l.fires[i], true
		}
	}
	return fireRec{}, false
}

func (l *ledger) persist() persisted {
	p := persisted{Fires: l.fires, Outcomes: l.outcomes, Multiplier: l.multiplier}
	if p.Fires == nil {
		p.Fires = []fireRec{}
	}
	if p.Outcomes == nil {
		p.Outcomes = []outcomeRec{}
	}
	if l.lastDismissal > 0 {
		p.LastDismissal = time.Unix(0, l.lastDismissal).UTC()
	}
	return p
}
