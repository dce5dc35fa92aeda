package lease_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/sentagain"
	"github.com/icekeeper/icekeeper/shared/lease"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func setup(t *testing.T) (*lease.Store, *clock) {
	t.Helper()
	s, _, _, c := setupSentAgain(t)
	return s, c
}

func TestStore_AcquireIsExclusiveUntilExpiry(t *testing.T) {
	s, c := setup(t)
	ctx := context.Background()
	a, err := s.Acquire(ctx, "db.t", "job-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "db.t", "job-b", time.Minute); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("second acquire: %v, want ErrHeld", err)
	}
	c.add(2 * time.Minute)
	b, err := s.Acquire(ctx, "db.t", "job-b", time.Minute)
	if err != nil {
		t.Fatalf("acquire after expiry: %v", err)
	}
	if b.Token <= a.Token {
		t.Fatalf("token did not grow: %d then %d", a.Token, b.Token)
	}
	if b.Superseded != "job-a" {
		t.Fatalf("superseded %q, want job-a (its term expired and was taken over)", b.Superseded)
	}
	// The expired holder can neither renew nor release the new term.
	if _, err := s.Renew(ctx, a, time.Minute); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("renew by expired holder: %v, want ErrLost", err)
	}
	if err := s.Release(ctx, a); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("release by expired holder: %v, want ErrLost", err)
	}
	if ok, _ := s.Holds(ctx, "db.t", "job-b", b.Token); !ok {
		t.Fatal("new holder lost its lease to the old holder's calls")
	}
}

func TestStore_ReleaseKeepsTheTokenGrowing(t *testing.T) {
	s, _ := setup(t)
	ctx := context.Background()
	a, err := s.Acquire(ctx, "db.t", "job-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, held, _ := s.Get(ctx, "db.t"); held {
		t.Fatal("released lease still held")
	}
	b, err := s.Acquire(ctx, "db.t", "job-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if b.Token != a.Token+1 {
		t.Fatalf("token after release: %d, want %d", b.Token, a.Token+1)
	}
	if b.Superseded != "" {
		t.Fatalf("a released term was reported superseded: %q", b.Superseded)
	}
	if got, _, _ := s.Get(ctx, "db.t"); got.Token != b.Token || got.Owner != "job-b" {
		t.Fatalf("stored lease %+v, acquired %+v", got, b)
	}
}

func TestStore_RenewExtendsOnlyTheExactTerm(t *testing.T) {
	s, c := setup(t)
	ctx := context.Background()
	a, err := s.Acquire(ctx, "db.t", "job-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c.add(50 * time.Second)
	a2, err := s.Renew(ctx, a, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c.add(50 * time.Second) // past the first expiry, within the renewed one
	if _, err := s.Acquire(ctx, "db.t", "job-b", time.Minute); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("acquire during renewed term: %v, want ErrHeld", err)
	}
	wrong := a2
	wrong.Token++
	if _, err := s.Renew(ctx, wrong, time.Minute); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("renew with another token: %v, want ErrLost", err)
	}
	if a2.Owner == "" || !c.now().Before(a2.ExpiresAt.Add(-5*time.Second)) {
		t.Fatal("renewed lease not valid within its term")
	}
}

func TestStore_RacingAcquirersGetOneTerm(t *testing.T) {
	s, _ := setup(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Acquire(ctx, "db.race", "job-"+string(rune('a'+i)), time.Minute)
			if err == nil {
				mu.Lock()
				won++
				mu.Unlock()
			} else if !errors.Is(err, lease.ErrHeld) {
				t.Errorf("acquire: %v", err)
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d acquirers won, want 1", won)
	}
}

func TestStore_AnExpiredTermNobodyTookCanBeRenewed(t *testing.T) {
	s, c := setup(t)
	ctx := context.Background()
	a, err := s.Acquire(ctx, "db.t", "job-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c.add(5 * time.Minute)
	if ok, _ := s.Holds(ctx, "db.t", "job-a", a.Token); !ok {
		t.Fatal("an expired term nobody took over is still the current term")
	}
	if _, err := s.Renew(ctx, a, time.Minute); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if _, err := s.Acquire(ctx, "db.t", "job-b", time.Minute); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("acquire after renewal: %v, want ErrHeld", err)
	}
}

// TestStore_ConflictAbortsWaitLessAndGrowToACap: jobs aborted by
// concurrent commits back the table off from the second in a row, for
// ConflictBackoffBase (minutes, not hours), doubling with each further
// one, never longer than ConflictBackoffMax.
func TestStore_ConflictAbortsWaitLessAndGrowToACap(t *testing.T) {
	s, c := setup(t)
	ctx := context.Background()
	if b, _ := s.RecordFailure(ctx, "db.t", lease.ClassConflict); b.Active(c.now()) {
		t.Fatalf("after one conflict abort: %+v, want no wait", b)
	}
	want := lease.ConflictBackoffBase
	for i := 2; i <= 12; i++ {
		b, err := s.RecordFailure(ctx, "db.t", lease.ClassConflict)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Until.Sub(c.now()); got != min(want, lease.ConflictBackoffMax) {
			t.Fatalf("after %d conflict aborts: wait %s, want %s", i, got, min(want, lease.ConflictBackoffMax))
		}
		want *= 2
	}
	if lease.ConflictBackoffMax >= lease.BackoffMax || lease.ConflictBackoffBase >= lease.BackoffBase {
		t.Fatal("a conflict backoff must stay shorter than a failure backoff")
	}
}

// TestStore_SameFailureTwiceInARowBacksTheTableOff: one failure does not
// back a table off; a second of the same kind does, for BackoffBase,
// doubling with the next, as Acquire reports; a failure of another kind
// starts a new streak, and a success clears the record.
func TestStore_SameFailureTwiceInARowBacksTheTableOff(t *testing.T) {
	s, c := setup(t)
	ctx := context.Background()
	b, err := s.RecordFailure(ctx, "db.t", "rewrite")
	if err != nil {
		t.Fatal(err)
	}
	if b.Streak != 1 || b.Active(c.now()) {
		t.Fatalf("after one failure: %+v, want no backoff", b)
	}
	if b, _ = s.RecordFailure(ctx, "db.t", "rewrite"); b.Streak != 2 || !b.Until.Equal(c.now().Add(lease.BackoffBase)) {
		t.Fatalf("after two failures: %+v, want a backoff of %s", b, lease.BackoffBase)
	}
	l, err := s.Acquire(ctx, "db.t", "job-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Backoff.Active(c.now()) || l.Backoff.Class != "rewrite" {
		t.Fatalf("acquire reports %+v, want the active backoff", l.Backoff)
	}
	if b, _ = s.RecordFailure(ctx, "db.t", "rewrite"); !b.Until.Equal(c.now().Add(2 * lease.BackoffBase)) {
		t.Fatalf("after three failures: %+v, want %s", b, 2*lease.BackoffBase)
	}
	if b, _ = s.RecordFailure(ctx, "db.t", "invariant"); b.Streak != 1 || b.Active(c.now()) {
		t.Fatalf("a failure of another kind: %+v, want a new streak without backoff", b)
	}
	if _, err := s.RecordFailure(ctx, "db.t", "invariant"); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordSuccess(ctx, "db.t"); err != nil {
		t.Fatal(err)
	}
	c.add(2 * time.Minute)
	l, err = s.Acquire(ctx, "db.t", "job-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if l.Backoff != (lease.Backoff{}) {
		t.Fatalf("after a success: %+v, want no record", l.Backoff)
	}
}

// TestStore_PastJobsAreRememberedUntilForgotten: every term's owner joins
// the table's past jobs; the next Acquire reports them, and ForgetJobs
// removes the ones cleaned up.
func TestStore_PastJobsAreRememberedUntilForgotten(t *testing.T) {
	s, _ := setup(t)
	ctx := context.Background()
	for _, j := range []string{"job-a", "job-b"} {
		l, err := s.Acquire(ctx, "db.t", j, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	l, err := s.Acquire(ctx, "db.t", "job-c", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.PastJobs, ","); got != "job-a,job-b" {
		t.Fatalf("past jobs %q, want job-a,job-b", got)
	}
	if err := s.ForgetJobs(ctx, "db.t", []string{"job-a", "job-c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	l, err = s.Acquire(ctx, "db.t", "job-d", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.PastJobs, ","); got != "job-b" {
		t.Fatalf("past jobs %q, want job-b", got)
	}
}

// setupSentAgain is setup, with the cooldown store, on a client that
// sends every DynamoDB write twice while db.On (the SDK's retry after a
// lost response, package sentagain; off unless a test turns it on).
func setupSentAgain(t *testing.T) (*lease.Store, *lease.CooldownStore, *sentagain.DynamoDB, *clock) {
	t.Helper()
	cloud := localcloud.Start()
	t.Cleanup(cloud.Close)
	res, err := cloud.Provision(context.Background(), "lease", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	db := &sentagain.DynamoDB{Client: cloud.Clients.DynamoDB}
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	s, err := lease.NewStore(db, res.LeaseTable, c.now)
	if err != nil {
		t.Fatal(err)
	}
	cd, err := lease.NewCooldownStore(db, res.LeaseTable)
	if err != nil {
		t.Fatal(err)
	}
	return s, cd, db, c
}

// TestStore_AnAcquireSentAgainAfterItsResponseWasLostKeepsItsTerm: the
// SDK sends a request again when the connection broke under its
// response; the second try of an Acquire that took the term fails its
// condition on the first try's write. That is the caller's term, not a
// lease held by another job (which left the table unplanned until the
// lease expired); a real holder still makes it ErrHeld.
func TestStore_AnAcquireSentAgainAfterItsResponseWasLostKeepsItsTerm(t *testing.T) {
	s, _, db, c := setupSentAgain(t)
	ctx := context.Background()
	old, err := s.Acquire(ctx, "db.t", "job-old", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, old); err != nil {
		t.Fatal(err)
	}
	c.add(time.Minute)
	db.On.Store(true)
	l, err := s.Acquire(ctx, "db.t", "job-a", time.Minute)
	if err != nil || db.Repeated.Load() == 0 {
		t.Fatalf("acquire sent again (%d repeated): %v, want the term", db.Repeated.Load(), err)
	}
	if l.Owner != "job-a" || l.Token != old.Token+1 || !slices.Equal(l.PastJobs, []string{"job-old"}) {
		t.Fatalf("term %+v, want job-a's with token %d and past jobs [job-old]", l, old.Token+1)
	}
	if ok, err := s.Holds(ctx, "db.t", "job-a", l.Token); !ok || err != nil {
		t.Fatalf("holds: %v %v", ok, err)
	}
	if _, err := s.Acquire(ctx, "db.t", "job-b", time.Minute); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("another job's acquire sent again: %v, want ErrHeld", err)
	}
}

// TestCooldownStore_AClaimSentAgainAfterItsResponseWasLostKeepsItsSlot:
// the second try of a Claim that took the slot fails its condition on the
// first try's write; the slot is the claimer's. Another claim within the
// cooldown still gets none, and learns when the slot ends.
func TestCooldownStore_AClaimSentAgainAfterItsResponseWasLostKeepsItsSlot(t *testing.T) {
	_, cd, db, c := setupSentAgain(t)
	ctx := context.Background()
	db.On.Store(true)
	claimedAt := c.now()
	slot, err := cd.Claim(ctx, "db.t", claimedAt, time.Hour)
	if !slot.Claimed || err != nil || db.Repeated.Load() == 0 {
		t.Fatalf("claim sent again (%d repeated): %+v %v, want the slot", db.Repeated.Load(), slot, err)
	}
	c.add(time.Minute)
	slot, err = cd.Claim(ctx, "db.t", c.now(), time.Hour)
	if slot.Claimed || err != nil {
		t.Fatalf("a second claim within the cooldown: %+v %v, want none", slot, err)
	}
	if want := claimedAt.Add(time.Hour); !slot.Ends.Equal(want.Truncate(time.Millisecond)) {
		t.Fatalf("the held slot ends %v, want %v", slot.Ends, want)
	}
}
