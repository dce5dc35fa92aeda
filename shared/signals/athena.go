package signals

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/athena"
	athenatypes "github.com/aws/aws-sdk-go-v2/service/athena/types"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/icekeeper/icekeeper/shared/workload"
)

// ErrUnparsable: a query's text could not be read for signals. It is not
// worth a retry: the query is dropped (and counted).
var ErrUnparsable = errors.New("signals: query text not understood")

// AthenaAPI is the Athena call the adapter makes (athena:GetQueryExecution).
type AthenaAPI interface {
	GetQueryExecution(ctx context.Context, in *athena.GetQueryExecutionInput, opts ...func(*athena.Options)) (*athena.GetQueryExecutionOutput, error)
}

// Athena turns a succeeded Athena query into observations. Athena's
// "Athena Query State Change" event carries no query text, so the adapter
// reads the execution (GetQueryExecution: the query, its default database,
// Statistics.DataScannedInBytes) and parses the text with Vitess's SQL
// parser (vitess.io/vitess/go/vt/sqlparser, maintained with Vitess; a
// MySQL grammar, so Athena's double-quoted identifiers are turned into
// backquoted ones first). Each table the query reads gets one observation
// with the columns its WHERE and ON clauses compare with something other
// than another column, and an equal share of the bytes scanned (Athena
// reports them per query). Rows returned are not in the execution and
// stay 0.
//
// Each observation's workload class is workload.OfAthena's: a tag in the
// text ("icekeeper-class: dashboard"), else the workgroup's
// (WorkGroupClasses, else a word of its name), else ad hoc.
type Athena struct {
	API AthenaAPI
	Now func() time.Time
	// WorkGroupClasses maps workgroups to workload classes (the stack's
	// athenaWorkGroupClasses setting; nil: by name only).
	WorkGroupClasses map[string]string
}

// Observations reads one query execution. A query that is not a
// succeeded DML statement has none; a text that does not parse is
// ErrUnparsable; an API failure is returned as is (retryable).
func (a Athena) Observations(ctx context.Context, queryExecutionID string) ([]Observation, error) {
	out, err := a.API.GetQueryExecution(ctx, &athena.GetQueryExecutionInput{QueryExecutionId: &queryExecutionID})
	if err != nil {
		return nil, fmt.Errorf("signals: athena GetQueryExecution %s: %w", queryExecutionID, err)
	}
	qe := out.QueryExecution
	if qe == nil || qe.Query == nil || qe.Status == nil || qe.Status.State != athenatypes.QueryExecutionStateSucceeded || qe.StatementType != athenatypes.StatementTypeDml {
		return nil, nil
	}
	db := ""
	if qe.QueryExecutionContext != nil && qe.QueryExecutionContext.Database != nil {
		db = *qe.QueryExecutionContext.Database
	}
	byTable, err := ParseFilters(*qe.Query, db)
	if err != nil {
		return nil, fmt.Errorf("athena query %s: %w", queryExecutionID, err)
	}
	var bytes int64
	if qe.Statistics != nil && qe.Statistics.DataScannedInBytes != nil {
		bytes = *qe.Statistics.DataScannedInBytes
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	wg := ""
	if qe.WorkGroup != nil {
		wg = *qe.WorkGroup
	}
	class := workload.OfAthena(*qe.Query, wg, a.WorkGroupClasses)
	var obs []Observation
	for _, t := range byTable {
		obs = append(obs, Observation{Table: t.Table, Filters: t.Filters, Equals: t.Equals, BytesScanned: bytes / int64(len(byTable)), Engine: "athena", QueryID: queryExecutionID, Class: class, At: now()})
	}
	return obs, nil
}

// TableFilters is one table a query reads and the columns it filters on.
type TableFilters struct {
	Table   string
	Filters []Filter
	// Equals are the literals columns were compared with (=, IN).
	Equals map[string][]string
}

// ParseFilters reads a query's tables and the predicates on their
// columns. Names are lowercased (Athena's, as Trino's, are case
// insensitive); an unqualified table is in defaultDB. A column is
// attributed to a table by its qualifier (alias or name), or, unqualified,
// when the query reads one table only; otherwise it is left out. Tables
// come in the order they first appear.
func ParseFilters(sql, defaultDB string) ([]TableFilters, error) {
	stmt, err := parser().Parse(backquoteIdentifiers(sql))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnparsable, err)
	}
	if _, ok := stmt.(sqlparser.TableStatement); !ok {
		return nil, fmt.Errorf("%w: not a query (%T)", ErrUnparsable, stmt)
	}
	defaultDB = strings.ToLower(defaultDB)
	var tables []TableFilters
	index := map[string]int{}      // full name -> tables index
	aliases := map[string]string{} // alias or bare name -> full name
	type pred struct {
		col    *sqlparser.ColName
		p      Predicate
		values []string
	}
	var preds []pred
	err = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		switch n := node.(type) {
		case *sqlparser.AliasedTableExpr:
			tn, ok := n.Expr.(sqlparser.TableName)
			if !ok {
				return true, nil
			}
			db := strings.ToLower(tn.Qualifier.String())
			if db == "" {
				db = defaultDB
			}
			name := strings.ToLower(tn.Name.String())
			if db == "" || name == "" {
				return true, nil
			}
			full := db + "." + name
			if _, ok := index[full]; !ok {
				index[full] = len(tables)
				tables = append(tables, TableFilters{Table: full})
			}
			aliases[name] = full
			if !n.As.IsEmpty() {
				aliases[strings.ToLower(n.As.String())] = full
			}
		case *sqlparser.ComparisonExpr:
			col, other := columnAndOther(n.Left, n.Right)
			if col != nil && other != nil {
				preds = append(preds, pred{col, comparisonPredicate(n.Operator, other), literals(n.Operator, other)})
			}
		case *sqlparser.BetweenExpr:
			if c, ok := n.Left.(*sqlparser.ColName); ok && n.IsBetween {
				preds = append(preds, pred{col: c, p: PredicateRange})
			}
		case *sqlparser.IsExpr:
			if c, ok := n.Left.(*sqlparser.ColName); ok && n.Right == sqlparser.IsNullOp {
				preds = append(preds, pred{col: c, p: PredicateIsNull})
			}
		}
		return true, nil
	}, stmt)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnparsable, err)
	}
	for _, p := range preds {
		full := ""
		if q := strings.ToLower(p.col.Qualifier.Name.String()); q != "" {
			full = aliases[q]
			if db := strings.ToLower(p.col.Qualifier.Qualifier.String()); db != "" {
				full = db + "." + q
			}
		} else if len(tables) == 1 {
			full = tables[0].Table
		}
		i, ok := index[full]
		if !ok {
			continue
		}
		col := p.col.Name.Lowered()
		tables[i].Filters = append(tables[i].Filters, Filter{Column: col, Predicate: p.p})
		if len(p.values) > 0 {
			if tables[i].Equals == nil {
				tables[i].Equals = map[string][]string{}
			}
			tables[i].Equals[col] = append(tables[i].Equals[col], p.values...)
		}
	}
	return tables, nil
}

// literals are the constants of an = or IN comparison, as text.
func literals(op sqlparser.ComparisonExprOperator, other sqlparser.Expr) []string {
	switch op {
	case sqlparser.EqualOp:
		if lit, ok := other.(*sqlparser.Literal); ok {
			return []string{lit.Val}
		}
	case sqlparser.InOp:
		tuple, ok := other.(sqlparser.ValTuple)
		if !ok {
			return nil
		}
		var out []string
		for _, e := range tuple {
			if lit, ok := e.(*sqlparser.Literal); ok {
				out = append(out, lit.Val)
			}
		}
		return out
	}
	return nil
}

// columnAndOther returns the column of a comparison and its other side,
// when exactly one side is a column (a join condition filters nothing).
func columnAndOther(l, r sqlparser.Expr) (*sqlparser.ColName, sqlparser.Expr) {
	lc, lok := l.(*sqlparser.ColName)
	rc, rok := r.(*sqlparser.ColName)
	switch {
	case lok && !rok:
		return lc, r
	case rok && !lok:
		return rc, l
	}
	return nil, nil
}

func comparisonPredicate(op sqlparser.ComparisonExprOperator, other sqlparser.Expr) Predicate {
	switch op {
	case sqlparser.EqualOp, sqlparser.NullSafeEqualOp:
		return PredicateEq
	case sqlparser.InOp:
		return PredicateIn
	case sqlparser.LessThanOp, sqlparser.GreaterThanOp, sqlparser.LessEqualOp, sqlparser.GreaterEqualOp:
		return PredicateRange
	case sqlparser.LikeOp:
		if lit, ok := other.(*sqlparser.Literal); ok && !strings.HasPrefix(lit.Val, "%") && !strings.HasPrefix(lit.Val, "_") {
			return PredicatePrefix
		}
	}
	return PredicateOther
}

// backquoteIdentifiers turns ANSI double-quoted identifiers ("db"."t")
// into MySQL's backquoted ones, leaving string literals alone.
func backquoteIdentifiers(sql string) string {
	var b strings.Builder
	inString, inIdent := false, false
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		switch {
		case inString:
			b.WriteByte(c)
			if c == '\'' {
				if i+1 < len(sql) && sql[i+1] == '\'' {
					b.WriteByte('\'')
					i++
				} else {
					inString = false
				}
			}
		case inIdent:
			switch {
			case c == '"' && i+1 < len(sql) && sql[i+1] == '"':
				b.WriteByte('"')
				i++
			case c == '"':
				b.WriteByte('`')
				inIdent = false
			case c == '`':
				b.WriteString("``")
			default:
				b.WriteByte(c)
			}
		case c == '\'':
			inString = true
			b.WriteByte(c)
		case c == '"':
			inIdent = true
			b.WriteByte('`')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// parser is Vitess's parser with its defaults.
func parser() *sqlparser.Parser {
	p, err := sqlparser.New(sqlparser.Options{})
	if err != nil {
		panic(err) // the default version always converts
	}
	return p
}
