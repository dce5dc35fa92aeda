package signals

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/athena"
	athenatypes "github.com/aws/aws-sdk-go-v2/service/athena/types"
)

func TestParseFilters_TablesAndTheirPredicateColumns(t *testing.T) {
	cases := map[string]struct {
		sql  string
		want []TableFilters
	}{
		"athena quoting, one table": {
			`SELECT * FROM "shop"."Orders" WHERE "order_id" = 42 AND amount BETWEEN 1 AND 9 AND note LIKE 'ab%' AND region IS NULL AND "ts" >= TIMESTAMP '2026-12-01 00:00:00'`,
			[]TableFilters{{Table: "shop.orders", Filters: []Filter{{"order_id", PredicateEq}, {"amount", PredicateRange}, {"note", PredicatePrefix}, {"region", PredicateIsNull}, {"ts", PredicateRange}},
				Equals: map[string][]string{"order_id": {"42"}}}},
		},
		"default database, IN and a string with a double quote": {
			`select id from orders where id in (1, 2, 3) and note = 'say "hi"' and name like '%x'`,
			[]TableFilters{{Table: "shop.orders", Filters: []Filter{{"id", PredicateIn}, {"note", PredicateEq}, {"name", PredicateOther}},
				Equals: map[string][]string{"id": {"1", "2", "3"}, "note": {`say "hi"`}}}},
		},
		"join: qualified columns go to their tables, the join condition to none": {
			`SELECT o.id FROM shop.orders o JOIN shop.customers c ON o.customer_id = c.id WHERE o.day = DATE '2026-12-01' AND c.country = 'FR' AND status = 'x'`,
			[]TableFilters{{Table: "shop.orders", Filters: []Filter{{"day", PredicateEq}}, Equals: map[string][]string{"day": {"2026-12-01"}}},
				{Table: "shop.customers", Filters: []Filter{{"country", PredicateEq}}, Equals: map[string][]string{"country": {"FR"}}}},
		},
		"no filter": {`SELECT count(*) FROM shop.orders`, []TableFilters{{Table: "shop.orders"}}},
	}
	for name, c := range cases {
		got, err := ParseFilters(c.sql, "Shop")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, c.want)
		}
	}
	for _, bad := range []string{"SELEC nothing", "CREATE TABLE t (a int)"} {
		if _, err := ParseFilters(bad, "shop"); !errors.Is(err, ErrUnparsable) {
			t.Errorf("%q: %v, want ErrUnparsable", bad, err)
		}
	}
}

type fakeAthena struct {
	out *athena.GetQueryExecutionOutput
	err error
}

func (f fakeAthena) GetQueryExecution(context.Context, *athena.GetQueryExecutionInput, ...func(*athena.Options)) (*athena.GetQueryExecutionOutput, error) {
	return f.out, f.err
}

func execution(state athenatypes.QueryExecutionState, st athenatypes.StatementType, sql string, bytes int64) *athena.GetQueryExecutionOutput {
	return &athena.GetQueryExecutionOutput{QueryExecution: &athenatypes.QueryExecution{
		Query:                 aws.String(sql),
		StatementType:         st,
		Status:                &athenatypes.QueryExecutionStatus{State: state},
		QueryExecutionContext: &athenatypes.QueryExecutionContext{Database: aws.String("shop")},
		Statistics:            &athenatypes.QueryExecutionStatistics{DataScannedInBytes: aws.Int64(bytes)},
	}}
}

func TestAthena_ASucceededQueryBecomesOneObservationPerTable(t *testing.T) {
	a := Athena{API: fakeAthena{out: execution(athenatypes.QueryExecutionStateSucceeded, athenatypes.StatementTypeDml,
		`SELECT * FROM orders o JOIN customers c ON o.cid = c.id WHERE o.id = 1 AND c.country = 'FR'`, 1000)}, Now: func() time.Time { return noon }}
	obs, err := a.Observations(context.Background(), "q1")
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 2 || obs[0].Table != "shop.orders" || obs[0].BytesScanned != 500 || obs[0].Engine != "athena" || obs[0].QueryID != "q1" || !obs[0].At.Equal(noon) {
		t.Fatalf("observations %+v", obs)
	}
	for _, o := range obs {
		if err := o.Validate(); err != nil {
			t.Error(err)
		}
	}
	for name, f := range map[string]fakeAthena{
		"failed": {out: execution(athenatypes.QueryExecutionStateFailed, athenatypes.StatementTypeDml, `SELECT 1 FROM orders`, 0)},
		"ddl":    {out: execution(athenatypes.QueryExecutionStateSucceeded, athenatypes.StatementTypeDdl, `CREATE TABLE x (a int)`, 0)},
	} {
		if obs, err := (Athena{API: f}).Observations(context.Background(), "q"); err != nil || len(obs) != 0 {
			t.Errorf("%s: %+v %v, want none", name, obs, err)
		}
	}
	boom := errors.New("throttled")
	if _, err := (Athena{API: fakeAthena{err: boom}}).Observations(context.Background(), "q"); !errors.Is(err, boom) {
		t.Errorf("API error %v, want it returned", err)
	}
}
