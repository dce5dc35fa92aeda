package trigger

import (
	"slices"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/config"
)

// TestResolve_TablesWithLocationsOfTheirOwnAreFoundThroughTheIndex: an S3
// event's location outside the catalogs' layout is resolved by a walk of
// the granted tables only while there is no index younger than
// LocationIndexMaxAge; the walk and every sweep write the index, and
// with it a location costs at most one load: none when no granted table
// is there (the commits of every table in a bucket the stack's widened
// rules match), one to check the table it names, one per table the sweep
// could not load. s3a:// and s3:// spell one location.
func TestResolve_TablesWithLocationsOfTheirOwnAreFoundThroughTheIndex(t *testing.T) {
	r := newRig(t, config.ModeActive, "shop")
	r.planner.results["compaction"] = planned
	r.cat.tables["shop.a"] = memTableAt(t, "shop.a", "s3://lake/tables/a", optedIn())
	r.cat.tables["shop.c"] = memTableAt(t, "shop.c", "s3a://lake/tables/c", optedIn())
	r.add(t, "shop.b", optedIn(), due)
	r.assessor.byTable["shop.a"], r.assessor.byTable["shop.c"] = due, due
	now := testNow
	r.now = func() time.Time { return now }

	event := func(loc string) (TableOutcome, []string) {
		t.Helper()
		r.cat.loads = nil
		r.cooldowns.next = nil
		out, err := r.dispatch(t, events.Trigger{Kind: events.KindS3, Locations: []string{loc}})
		if err != nil {
			t.Fatal(err)
		}
		return onlyOutcome(t, out), slices.Clone(r.cat.loads)
	}
	resolved := func(o TableOutcome, loads []string, want string, wantLoads int) {
		t.Helper()
		switch {
		case want == "" && o.Skip != SkipUnresolved:
			t.Errorf("%+v, want unresolved", o)
		case want != "" && o.Table != want:
			t.Errorf("%+v, want %s", o, want)
		}
		if wantLoads >= 0 && len(loads) != wantLoads {
			t.Errorf("loaded %v, want %d loads", loads, wantLoads)
		}
	}

	// No index yet: a walk of the three tables finds it (and the visit
	// loads it once more), and writes the index.
	o, loads := event("s3://lake/tables/a/")
	resolved(o, loads, "shop.a", 3+1)
	if !slices.Contains(r.reports.puts, LocationIndexName) {
		t.Fatalf("the walk wrote %v, want the index", r.reports.puts)
	}
	// With the index: an ungranted table's commit loads nothing; a
	// granted table's loads it to check, then to visit; Spark's s3a://
	// location is the event's s3://.
	o, loads = event("s3://lake/tables/not-granted")
	resolved(o, loads, "", 0)
	o, loads = event("s3://lake/tables/c")
	resolved(o, loads, "shop.c", 1+1)
	// A table moved since the index was written is not trusted to it.
	r.cat.tables["shop.a"] = memTableAt(t, "shop.a", "s3://lake/moved/a", optedIn())
	o, loads = event("s3://lake/tables/a")
	resolved(o, loads, "", 1)

	// Past its age the index is not trusted to say no: walked again.
	now = now.Add(LocationIndexMaxAge + time.Minute)
	o, loads = event("s3://lake/tables/not-granted")
	resolved(o, loads, "", 3)
	o, loads = event("s3://lake/moved/a")
	resolved(o, loads, "shop.a", 1+1)

	// A sweep writes the index too.
	now = now.Add(LocationIndexMaxAge + time.Minute)
	r.reports.puts = nil
	if _, err := r.dispatch(t, events.Trigger{Kind: events.KindSchedule, Sweep: true}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.reports.puts, LocationIndexName) {
		t.Fatalf("the sweep wrote %v, want the index", r.reports.puts)
	}
	o, loads = event("s3://lake/tables/not-granted")
	resolved(o, loads, "", 0)

	// A table the sweep could not load is in the index as unknown: a
	// location the index lacks is checked against it alone (one load,
	// not a walk), and found there once it loads again.
	now = now.Add(time.Minute)
	r.cat.errs["shop.c"] = errTransient
	if _, err := r.dispatch(t, events.Trigger{Kind: events.KindSchedule, Sweep: true}); err == nil {
		t.Fatal("a sweep with a table it could not load succeeded, want its error")
	}
	o, loads = event("s3://lake/tables/not-granted")
	resolved(o, loads, "", 1)
	delete(r.cat.errs, "shop.c")
	o, loads = event("s3://lake/tables/c")
	resolved(o, loads, "shop.c", 1+1)
}
