package localstack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// glueStandIn is a copy of tests/glue_standin_test.go's (package tests is
// not importable), without its test hooks: LocalStack's free tier has no
// Glue (every call answers 501), so the second stack's functions and the
// test reach this one instead, through the catalog property glue.endpoint.
// What it serves and how it differs from AWS Glue: tests/glue_standin_test.go.
type glueStandIn struct {
	mu      sync.Mutex
	dbs     map[string]map[string]any            // name -> Database
	tables  map[string]map[string]map[string]any // db -> name -> Table
	version map[string]int                       // "db.table" -> VersionId
	calls   map[string]int
}

// newGlueStandIn serves on 127.0.0.1, where the functions run (the
// icekeeper-rie executor runs them on this host).
func newGlueStandIn(t *testing.T) (*glueStandIn, string) {
	g := &glueStandIn{dbs: map[string]map[string]any{}, tables: map[string]map[string]map[string]any{}, version: map[string]int{}, calls: map[string]int{}}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, srv.URL
}

func (g *glueStandIn) callCount(op string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[op]
}

type glueError struct {
	code string
	msg  string
}

func (g *glueStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AWSGlue.")
	var in map[string]any
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeGlue(w, nil, &glueError{"InvalidInputException", err.Error()})
		return
	}
	g.mu.Lock()
	g.calls[op]++
	out, gerr := g.handle(op, in)
	g.mu.Unlock()
	writeGlue(w, out, gerr)
}
func writeGlue(w http.ResponseWriter, out any, gerr *glueError) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if gerr != nil {
		w.Header().Set("X-Amzn-ErrorType", gerr.code)
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": gerr.code, "Message": gerr.msg})
		return
	}
	if out == nil {
		out = map[string]any{}
	}
	_ = json.NewEncoder(w).Encode(out)
}

func str(v any) string { s, _ := v.(string); return s }

func (g *glueStandIn) handle(op string, in map[string]any) (any, *glueError) {
	notFound := func(what string) *glueError { return &glueError{"EntityNotFoundException", what + " not found"} }
	switch op {
	case "CreateDatabase":
		di, _ := in["DatabaseInput"].(map[string]any)
		name := str(di["Name"])
		if _, ok := g.dbs[name]; ok {
			return nil, &glueError{"AlreadyExistsException", "database " + name + " already exists"}
		}
		g.dbs[name] = di
		g.tables[name] = map[string]map[string]any{}
		return nil, nil
	case "GetDatabase":
		db, ok := g.dbs[str(in["Name"])]
		if !ok {
			return nil, notFound("database " + str(in["Name"]))
		}
		return map[string]any{"Database": db}, nil
	case "GetDatabases":
		var list []any
		names := make([]string, 0, len(g.dbs))
		for n := range g.dbs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			list = append(list, g.dbs[n])
		}
		return map[string]any{"DatabaseList": list}, nil
	case "UpdateDatabase":
		name := str(in["Name"])
		if _, ok := g.dbs[name]; !ok {
			return nil, notFound("database " + name)
		}
		g.dbs[name], _ = in["DatabaseInput"].(map[string]any)
		return nil, nil
	case "DeleteDatabase":
		delete(g.dbs, str(in["Name"]))
		delete(g.tables, str(in["Name"]))
		return nil, nil
	case "CreateTable":
		db := str(in["DatabaseName"])
		ts, ok := g.tables[db]
		if !ok {
			return nil, notFound("database " + db)
		}
		ti, _ := in["TableInput"].(map[string]any)
		name := str(ti["Name"])
		if _, ok := ts[name]; ok {
			return nil, &glueError{"AlreadyExistsException", "table " + name + " already exists"}
		}
		g.version[db+"."+name] = 1
		ts[name] = ti
		return nil, nil
	case "GetTable":
		db, name := str(in["DatabaseName"]), str(in["Name"])
		ti, ok := g.tables[db][name]
		if !ok {
			return nil, notFound("table " + db + "." + name)
		}
		return map[string]any{"Table": g.table(db, name, ti)}, nil
	case "GetTables":
		db := str(in["DatabaseName"])
		ts, ok := g.tables[db]
		if !ok {
			return nil, notFound("database " + db)
		}
		names := make([]string, 0, len(ts))
		for n := range ts {
			names = append(names, n)
		}
		sort.Strings(names)
		var list []any
		for _, n := range names {
			list = append(list, g.table(db, n, ts[n]))
		}
		return map[string]any{"TableList": list}, nil
	case "UpdateTable":
		db := str(in["DatabaseName"])
		ti, _ := in["TableInput"].(map[string]any)
		name := str(ti["Name"])
		if _, ok := g.tables[db][name]; !ok {
			return nil, notFound("table " + db + "." + name)
		}
		cur := strconv.Itoa(g.version[db+"."+name])
		if v := str(in["VersionId"]); v != "" && v != cur {
			return nil, &glueError{"ConcurrentModificationException", fmt.Sprintf("table %s.%s is at version %s, not %s", db, name, cur, v)}
		}
		g.version[db+"."+name]++
		g.tables[db][name] = ti
		return nil, nil
	case "DeleteTable":
		db, name := str(in["DatabaseName"]), str(in["Name"])
		if _, ok := g.tables[db][name]; !ok {
			return nil, notFound("table " + db + "." + name)
		}
		delete(g.tables[db], name)
		return nil, nil
	}
	return nil, &glueError{"InvalidInputException", "operation " + op + " is not served by the test stand-in"}
}

// table renders a stored TableInput as a Table.
func (g *glueStandIn) table(db, name string, ti map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range ti {
		out[k] = v
	}
	out["DatabaseName"] = db
	out["VersionId"] = strconv.Itoa(g.version[db+"."+name])
	return out
}
