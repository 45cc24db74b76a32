package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// RenderTable writes the outcomes as a Markdown table: one row per workload
// and worker count, ns/op of both implementations (W9: faio-native and
// net/http; its other two go in the details), their ratio, the latency,
// lateness or thread figures the targets involve, and the target of
// WORKLOADS.md with whether faio meets it. Targets are judged only on rows
// with targetWorkers workers (the number of CPUs), as WORKLOADS.md states
// them; failed and skipped runs say so in their cells. When the faio runs
// report their backend, a line before the table names it, and a row whose
// faio run was on the portable backend is judged against the portable
// target (PortableTarget, none for W9 and W10).
func RenderTable(outcomes []Outcome, targetWorkers int) string {
	return backendNote(outcomes) + renderRows(outcomes, targetWorkers, true)
}

// NotJudged is what the met column of an unjudged table says on every row
// that did not fail.
const NotJudged = "not judged"

// RenderUnjudgedTable writes the table of a run whose sizes are not those
// of WORKLOADS.md (a -quick run does a tenth of the work), so its figures
// say nothing about the targets: a line saying so and why comes first, the
// target column is empty ("—") and the met column says NotJudged, or
// FAILED for a run that failed, which matters at any size. why starts the
// line: "Quick run (-quick: a tenth of the sizes)".
func RenderUnjudgedTable(outcomes []Outcome, why string) string {
	note := fmt.Sprintf("%s: figures not judged against the targets of bench/WORKLOADS.md.\n\n", why)
	return note + backendNote(outcomes) + renderRows(outcomes, 0, false)
}

// backendNote is the line that names the backend the faio runs (the faio
// column, and W9's faio-native and faio-adapter) ran on, followed by a
// blank line; "" if no faio run reported one.
func backendNote(outcomes []Outcome) string {
	var backends []string
	for _, o := range outcomes {
		if o.Result != nil && o.Result.Backend != "" && !slices.Contains(backends, o.Result.Backend) {
			backends = append(backends, o.Result.Backend)
		}
	}
	if len(backends) == 0 {
		return ""
	}
	slices.Sort(backends)
	return fmt.Sprintf("faio backend: %s (the faio column and W9's faio-native and faio-adapter ran on it).\n\n", strings.Join(backends, " and "))
}

// rowBackend is the backend of a row's faio run: its own if it reported
// one, else that of the table's other faio runs if they agree.
func rowBackend(f Outcome, outcomes []Outcome) string {
	if f.Result != nil && f.Result.Backend != "" {
		return f.Result.Backend
	}
	seen := ""
	for _, o := range outcomes {
		if o.Result == nil || o.Result.Backend == "" {
			continue
		}
		if seen != "" && seen != o.Result.Backend {
			return ""
		}
		seen = o.Result.Backend
	}
	return seen
}

// renderRows writes the table; judge false leaves every target unjudged.
func renderRows(outcomes []Outcome, targetWorkers int, judge bool) string {
	type key struct {
		label   string
		workers int
	}
	type row struct {
		w       *Workload
		workers int
		passes  []map[Impl]Outcome // indexed by Outcome.Pass
		byImpl  map[Impl]Outcome   // the pass shown
		ratios  []float64          // every pass's ratio, in pass order
		failed  bool               // the pass shown is one where a run failed
	}
	var rows []*row
	index := map[key]*row{}
	for _, o := range outcomes {
		k := key{o.Workload.Label(), o.Workers}
		r := index[k]
		if r == nil {
			r = &row{w: o.Workload, workers: o.Workers}
			index[k] = r
			rows = append(rows, r)
		}
		for len(r.passes) <= o.Pass {
			r.passes = append(r.passes, map[Impl]Outcome{})
		}
		r.passes[o.Pass][o.Impl] = o
	}
	for _, r := range rows {
		r.byImpl, r.ratios, r.failed = shownPass(r.w, r.passes)
	}

	var b strings.Builder
	b.WriteString("| workload | workers | faio ns/op | goroutines ns/op | faio/goroutines | details | target | met |\n")
	b.WriteString("|---|---:|---:|---:|---:|---|---|---|\n")
	for _, r := range rows {
		f, fok := r.byImpl[r.w.primary(Faio)]
		g, gok := r.byImpl[r.w.primary(Goroutines)]
		ratio, target, met := "—", "—", "—"
		judged := judge && r.workers == targetWorkers
		backend := rowBackend(f, outcomes)
		goal, hasGoal := r.w.TargetOn(backend)
		if judged && !hasGoal {
			target, judged = "none on "+backend, false
		}
		if judged {
			target = goal.String()
		}
		if !judge {
			met = NotJudged
		}
		if fok && gok && f.Result != nil && g.Result != nil {
			ratio = fmt.Sprintf("%.2f", Ratio(*f.Result, *g.Result))
			if judged {
				ok, misses := goal.Check(*f.Result, *g.Result)
				met = "yes"
				if !ok {
					met = "no: " + strings.Join(misses, "; ")
				}
			}
		}
		// Any implementation's failure, W9's faio-adapter and fasthttp
		// included: shownPass shows the pass where it happened, not the
		// median one, so the row must not pass for a judged median.
		if r.failed {
			met = "FAILED"
		}
		d := details(r.w, r.byImpl)
		if len(r.passes) > 1 {
			d = joinDetails(d, passNote(r.ratios, len(r.passes), r.failed))
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n",
			r.w.Label(), r.workers, nsCell(f, fok), nsCell(g, gok), ratio,
			cell(d), target, cell(met))
	}
	return b.String()
}

// shownPass picks the pass a row shows when the run made several: the
// first pass with a failure, so that the table says FAILED; else the pass
// whose faio/goroutines ratio is the median (the lower middle one of an
// even count) among the passes where both sides succeeded, so that every
// figure of the row, and the judgement, comes from one same-run pair;
// else the first pass. ratios lists the ratio of every pass where both
// sides succeeded, in pass order.
func shownPass(w *Workload, passes []map[Impl]Outcome) (shown map[Impl]Outcome, ratios []float64, failedShown bool) {
	type paired struct {
		ratio float64
		pass  map[Impl]Outcome
	}
	var ok []paired
	var failed map[Impl]Outcome
	for _, p := range passes {
		for _, o := range p {
			if o.Err != nil && failed == nil {
				failed = p
			}
		}
		f, g := p[w.primary(Faio)], p[w.primary(Goroutines)]
		if f.Result != nil && g.Result != nil {
			r := Ratio(*f.Result, *g.Result)
			ratios = append(ratios, r)
			ok = append(ok, paired{r, p})
		}
	}
	switch {
	case failed != nil:
		return failed, ratios, true
	case len(ok) == 0:
		return passes[0], ratios, false
	}
	slices.SortStableFunc(ok, func(a, b paired) int { return cmp.Compare(a.ratio, b.ratio) })
	return ok[(len(ok)-1)/2].pass, ratios, false
}

// passNote is the details' note of a row of a run with several passes:
// the ratio of each pass where both sides succeeded, and which is shown.
func passNote(ratios []float64, passes int, failedShown bool) string {
	rs := make([]string, len(ratios))
	for i, r := range ratios {
		rs[i] = fmt.Sprintf("%.2f", r)
	}
	note := fmt.Sprintf("ratios of %d passes: %s, the median pass shown", passes, strings.Join(rs, ", "))
	if failedShown {
		note = fmt.Sprintf("ratios of %d passes: %s, a failed pass shown", passes, strings.Join(rs, ", "))
	}
	if len(ratios) < passes {
		note = fmt.Sprintf("ratios of %d of %d passes: %s", len(ratios), passes, strings.Join(rs, ", "))
	}
	return note
}

// joinDetails appends note to the details d.
func joinDetails(d, note string) string {
	if d == "" {
		return note
	}
	return d + "; " + note
}

// nsCell is the ns/op column of one implementation.
func nsCell(o Outcome, ran bool) string {
	switch {
	case !ran:
		return "—"
	case o.Skip != "":
		return "skipped"
	case o.Err != nil:
		return "FAILED"
	case o.Result == nil:
		return "—"
	}
	return fmt.Sprintf("%.1f", o.Result.NsPerOp)
}

// details lists, per implementation, the figures besides ns/op that a
// reader needs to judge the row (p99, server CPU per op and threads), then
// failures and skips, and the ratio of the server CPU per op (W7, W7c).
// An implementation without a column of its own (W9's faio-adapter and
// fasthttp) shows its ns/op here, and W9's row names its load generator.
func details(w *Workload, byImpl map[Impl]Outcome) string {
	f, g := byImpl[w.primary(Faio)], byImpl[w.primary(Goroutines)]
	if f.Skip != "" && f.Skip == g.Skip {
		return "skipped: " + f.Skip
	}
	var parts []string
	client := ""
	for _, v := range w.variants() {
		impl := v.impl
		o, ok := byImpl[impl]
		if !ok {
			continue
		}
		switch {
		case o.Skip != "":
			parts = append(parts, fmt.Sprintf("%s skipped: %s", impl, o.Skip))
		case o.Err != nil:
			parts = append(parts, fmt.Sprintf("%s FAILED: %v", impl, o.Err))
		case o.Result != nil:
			var fig []string
			if impl != w.primary(v.side) {
				fig = append(fig, fmt.Sprintf("%.1f ns/op", o.Result.NsPerOp))
			}
			if o.Result.Client != "" {
				client = o.Result.Client
			}
			if o.Result.P99us != nil {
				fig = append(fig, "p99 "+formatMicros(*o.Result.P99us))
			}
			if o.Result.ServerCPUus != nil {
				fig = append(fig, fmt.Sprintf("cpu %.2fµs/op", *o.Result.ServerCPUus))
			}
			if o.Result.Threads > 0 {
				t := fmt.Sprintf("%d threads", o.Result.Threads)
				if w := o.Result.IOWQThreads; w != nil && *w > 0 {
					t += fmt.Sprintf(" (%d io-wq)", *w)
				}
				fig = append(fig, t)
			}
			if len(fig) > 0 {
				parts = append(parts, fmt.Sprintf("%s %s", impl, strings.Join(fig, ", ")))
			}
		}
	}
	if f.Result != nil && g.Result != nil {
		if r, ok := CPURatio(*f.Result, *g.Result); ok {
			parts = append(parts, fmt.Sprintf("cpu ratio %.2f", r))
		}
	}
	if client != "" {
		parts = append(parts, "client "+client)
	}
	return strings.Join(parts, "; ")
}

// cell keeps text inside one Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
