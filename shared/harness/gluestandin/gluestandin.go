// Package gluestandin serves the AWS Glue Data Catalog calls iceberg-go's
// glue catalog makes (AWS JSON 1.1 protocol: POST / with X-Amz-Target
// AWSGlue.<Operation>), for the tests: kumo has no Glue UpdateTable, and
// LocalStack's free tier no Glue at all (every call answers 501).
//
// It keeps Glue's semantics for what icekeeper relies on: UpdateTable is
// guarded by the VersionId the caller read, and a stale one fails with
// ConcurrentModificationException (AWS Glue API reference, UpdateTable:
// "VersionId – The version ID at which to update the table contents");
// every update gives the table a new VersionId; a missing database or table
// is EntityNotFoundException; creating an existing one is
// AlreadyExistsException. tests/glue_contract_test.go holds it (and moto's
// Glue) to that.
//
// Simpler than the real service: no catalog ids (one catalog), no
// pagination (every list fits one page), no table versions kept
// (SkipArchive is ignored), no Lake Formation, no request validation beyond
// the fields read, and no signature check.
package gluestandin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Server is a running stand-in, on a loopback port.
type Server struct {
	// URL is its endpoint (the catalog property glue.endpoint).
	URL string

	srv     *httptest.Server
	mu      sync.Mutex
	dbs     map[string]map[string]any            // name -> Database
	tables  map[string]map[string]map[string]any // db -> name -> Table
	version map[string]int                       // "db.table" -> VersionId
	calls   map[string]int
	// beforeUpdate runs before an UpdateTable is applied (lock released).
	beforeUpdate func(db, table string)
}

// Start serves a new, empty catalog on 127.0.0.1.
func Start() *Server {
	g := &Server{dbs: map[string]map[string]any{}, tables: map[string]map[string]map[string]any{}, version: map[string]int{}, calls: map[string]int{}}
	g.srv = httptest.NewServer(g)
	g.URL = g.srv.URL
	return g
}

// Close stops it.
func (g *Server) Close() { g.srv.Close() }

// Calls counts the operation op (UpdateTable, GetTable, ...) served so far.
func (g *Server) Calls(op string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[op]
}

// BeforeUpdate sets a function run before each UpdateTable is applied, as
// another writer committing in between would.
func (g *Server) BeforeUpdate(f func(db, table string)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.beforeUpdate = f
}

type glueError struct {
	code string
	msg  string
}

func (g *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AWSGlue.")
	var in map[string]any
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeGlue(w, nil, &glueError{"InvalidInputException", err.Error()})
		return
	}
	g.mu.Lock()
	before := g.beforeUpdate
	g.mu.Unlock()
	if op == "UpdateTable" && before != nil {
		ti, _ := in["TableInput"].(map[string]any)
		before(str(in["DatabaseName"]), str(ti["Name"]))
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

func (g *Server) handle(op string, in map[string]any) (any, *glueError) {
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
func (g *Server) table(db, name string, ti map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range ti {
		out[k] = v
	}
	out["DatabaseName"] = db
	out["VersionId"] = strconv.Itoa(g.version[db+"."+name])
	return out
}

// ForTest starts a stand-in that stops when the test (or benchmark) ends,
// and returns it with its endpoint.
func ForTest(t interface{ Cleanup(func()) }) (*Server, string) {
	g := Start()
	t.Cleanup(g.Close)
	return g, g.URL
}
