package trigger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icekeeper/icekeeper/shared/blob"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/storagepath"
)

// An S3 event names a metadata file, so a location; the planner needs the
// table's name. A table in the catalogs' default layout
// (<warehouse>/<ns>.db/<table>) names itself. One created with a location
// of its own (Athena's and Spark's LOCATION, a Glue table pointed at a
// path) does not, and finding it took a load of every granted table: once
// the stack's S3 rules widen to whole buckets (more granted locations than
// its wildcard rules hold), every commit of any table in those buckets,
// granted or not, cost a GetTable and a metadata read per granted table.
//
// So the sweep, which loads every granted table anyway, writes the
// locations it found to LocationIndexName in icekeeper's bucket, and an
// event's location is looked up there: a location the index has is
// checked with one load; one it lacks is not granted, or a table new
// since the sweep (the next sweep visits it; its catalog's events name it
// meanwhile). Only without an index younger than LocationIndexMaxAge
// (before the first sweep, or when sweeps stopped) are the granted tables
// walked, SweepConcurrency at a time, and the index written from the
// walk.
//
// Locations are compared as storagepath.Key spells them: s3a://b/t and
// s3://b/t/ are one location, as Spark's tables and S3's events write
// them.

// LocationIndexName is the index's name in icekeeper's bucket (under its
// prefix).
const LocationIndexName = "locations/index.json"

// LocationIndexMaxAge is how old an index may be and still be trusted to
// say a location is not a granted table's: two hourly sweeps.
const LocationIndexMaxAge = 2 * time.Hour

// locationIndex is the index's JSON: when it was written, the granted
// tables by location (storagepath.Key), and the granted tables whose
// location its writer could not read (a load that failed): an event's
// location the index lacks is checked against each of those, so that one
// table's failed load costs a load per event, not a walk of them all.
type locationIndex struct {
	WrittenAt time.Time         `json:"written_at"`
	Tables    map[string]string `json:"tables"`
	Unknown   []string          `json:"unknown,omitempty"`
}

// locationKey is a location's spelling in the index.
func locationKey(loc string) string { return storagepath.Key(strings.TrimSuffix(loc, "/")) }

// writeLocationIndex stores the locations of the granted tables a sweep
// or a walk visited (locatedTables). Best effort: without it an event
// walks the tables, as before.
func (d *Dispatcher) writeLocationIndex(ctx context.Context, log *slog.Logger, idx locationIndex) {
	idx.WrittenAt = d.now().UTC()
	data, err := json.Marshal(idx)
	if err == nil {
		_, err = d.reports.Put(ctx, LocationIndexName, data)
	}
	if err != nil {
		log.Warn("location index not written: S3 events of tables outside the catalogs' layout walk the granted tables until it is", "err", err.Error())
	}
}

// readLocationIndex is the index when there is one younger than
// LocationIndexMaxAge, else nil.
func (d *Dispatcher) readLocationIndex(ctx context.Context, log *slog.Logger) *locationIndex {
	var idx locationIndex
	if err := d.readJSON(ctx, LocationIndexName, &idx); err != nil {
		if !errors.Is(err, blob.ErrNotFound) {
			log.Warn("location index not read; the granted tables are walked", "err", err.Error())
		}
		return nil
	}
	if age := d.now().Sub(idx.WrittenAt); age > LocationIndexMaxAge || age < -time.Minute {
		return nil
	}
	return &idx
}

// readJSON decodes the object name of icekeeper's bucket into v; the
// error wraps blob.ErrNotFound when there is none.
func (d *Dispatcher) readJSON(ctx context.Context, name string, v any) error {
	data, err := d.reports.Get(ctx, d.reports.Key(name))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("trigger: %s: %w", name, err)
	}
	return nil
}

// resolve finds the granted table at location loc, or "" when none is.
func (d *Dispatcher) resolve(ctx context.Context, log *slog.Logger, loc string) (string, error) {
	key := locationKey(loc)
	parts := strings.Split(strings.TrimSuffix(loc, "/"), "/")
	if n := len(parts); n >= 2 && strings.HasSuffix(parts[n-2], ".db") {
		name := strings.TrimSuffix(parts[n-2], ".db") + "." + parts[n-1]
		if !d.s.Grants.Granted(name) {
			// An ungranted table of the layout: no walk of every granted
			// table (a deployment whose S3 rules match whole buckets
			// sends every table's commits here). A granted table whose
			// location is another name's layout path (renamed) is not
			// woken by its metadata writes, as the stack's per-table S3
			// patterns never matched it either; its catalog's events and
			// the sweep still wake it.
			return "", nil
		}
		if d.locatedAt(ctx, name, key) {
			return name, nil
		}
	}
	if idx := d.readLocationIndex(ctx, log); idx != nil {
		if name, ok := idx.Tables[key]; ok {
			if d.locatedAt(ctx, name, key) {
				return name, nil
			}
			return "", nil
		}
		for _, name := range idx.Unknown {
			if d.locatedAt(ctx, name, key) {
				return name, nil
			}
		}
		return "", nil
	}
	names, err := d.grantedTables(ctx)
	if err != nil {
		return "", err
	}
	visits := d.eachTable(names, nil, func(name string) sweepVisit {
		ident, _ := messages.TableIdent(name)
		tbl, err := d.catalog.LoadTable(ctx, ident)
		switch {
		case err == nil:
			return sweepVisit{location: tbl.Location()}
		case errors.Is(err, catalog.ErrNoSuchTable), NotIceberg(err):
			return sweepVisit{}
		}
		return sweepVisit{err: err}
	})
	idx := locatedTables(names, visits)
	d.writeLocationIndex(ctx, log, idx)
	return idx.Tables[key], nil
}

// locatedAt says whether the table name loads and its location is key.
func (d *Dispatcher) locatedAt(ctx context.Context, name, key string) bool {
	ident, err := messages.TableIdent(name)
	if err != nil {
		return false
	}
	tbl, err := d.catalog.LoadTable(ctx, ident)
	return err == nil && locationKey(tbl.Location()) == key
}

// locatedTables is the index of the granted tables a sweep or a walk
// visited: each one that loaded by its location; each one whose load
// failed (a visit with an error and no location) as unknown. A table
// that is gone or not an Iceberg table is neither: nothing to find.
// Where two tables claim one location the first in name order is kept.
func locatedTables(names []string, visits []sweepVisit) locationIndex {
	idx := locationIndex{Tables: map[string]string{}}
	for i, v := range visits {
		switch {
		case v.location != "":
			if _, dup := idx.Tables[locationKey(v.location)]; !dup {
				idx.Tables[locationKey(v.location)] = names[i]
			}
		case v.err != nil:
			idx.Unknown = append(idx.Unknown, names[i])
		}
	}
	return idx
}

// keepUnvisitedLocations completes the index of a sweep that ran short of
// time (sweeptime.go) with the granted tables it did not visit: each keeps
// the location the last index had for it, and one that index did not
// locate is unknown (an event's location the index lacks is checked
// against it with a load), so that a split sweep never makes the index
// forget a table it did not see.
func (d *Dispatcher) keepUnvisitedLocations(ctx context.Context, log *slog.Logger, idx *locationIndex, unvisited []string) {
	prev := locationIndex{}
	if err := d.readJSON(ctx, LocationIndexName, &prev); err != nil && !errors.Is(err, blob.ErrNotFound) {
		log.Warn("location index not read; the tables this sweep did not visit are listed as unknown", "err", err.Error())
	}
	located := make(map[string]string, len(prev.Tables))
	for loc, name := range prev.Tables {
		located[name] = loc
	}
	for _, name := range unvisited {
		loc, ok := located[name]
		if _, taken := idx.Tables[loc]; ok && !taken {
			idx.Tables[loc] = name
			continue
		}
		idx.Unknown = append(idx.Unknown, name)
	}
}
