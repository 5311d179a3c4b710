//! The comparison as an SVG bar chart: one group of bars per scenario, one
//! bar per backend, its length the backend's median rate divided by the
//! reference backend's (log scale, so 0.1 × and 10 × are as far from 1 ×),
//! with the rate written beside it.

const COLORS: [&str; 8] = [
    "#1f77b4", "#aec7e8", "#5fa2dd", "#08306b", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2} M/s", r / 1e6)
    } else {
        format!("{:.1} k/s", r / 1e3)
    }
}

/// `groups`: (scenario label, [(backend, median rate)]).
pub fn chart(
    title: &str,
    reference: &str,
    backends: &[String],
    groups: &[(String, Vec<(String, f64)>)],
) -> String {
    let (left, bar, gap, width) = (150.0, 16.0, 22.0, 520.0);
    // Log scale from 1/32 x to 8 x.
    let (lo, hi) = (-5.0f64, 3.0f64);
    let x = |ratio: f64| left + (ratio.log2().clamp(lo, hi) - lo) / (hi - lo) * width;
    let rows: usize = groups.iter().map(|(_, r)| r.len()).sum();
    let height =
        70.0 + rows as f64 * bar + groups.len() as f64 * gap + 20.0 * backends.len() as f64;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"20\" font-size=\"13\">{}</text>\n",
        esc(title),
        w = left + width + 110.0
    );
    let top = 40.0;
    for t in [-5, -4, -3, -2, -1, 0, 1, 2, 3] {
        let r = 2f64.powi(t);
        let xx = x(r);
        let label = if t < 0 {
            format!("1/{}", 1 << -t)
        } else {
            format!("{}", 1 << t)
        };
        out += &format!(
            "<line x1=\"{xx:.1}\" y1=\"{top}\" x2=\"{xx:.1}\" y2=\"{:.1}\" stroke=\"{}\" stroke-dasharray=\"{}\"/>\n\
             <text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label} ×</text>\n",
            top + rows as f64 * bar + groups.len() as f64 * gap,
            if t == 0 { "#333" } else { "#ddd" },
            if t == 0 { "4,3" } else { "" },
            top - 4.0,
        );
    }
    let mut y = top + 6.0;
    let reference_rate =
        |rows: &[(String, f64)]| rows.iter().find(|(b, _)| b == reference).map(|r| r.1);
    for (label, rows) in groups {
        out += &format!(
            "<text x=\"8\" y=\"{:.1}\" font-weight=\"bold\">{}</text>\n",
            y + bar,
            esc(label)
        );
        let base = reference_rate(rows);
        for (i, (b, r)) in rows.iter().enumerate() {
            let ratio = base.map_or(1.0, |base| r / base);
            let x0 = x(1.0 / 32.0);
            let x1 = x(ratio);
            let color = backends
                .iter()
                .position(|n| n == b)
                .map_or(COLORS[i % 8], |k| COLORS[k % 8]);
            out += &format!(
                "<rect x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{color}\"><title>{}: {} ({ratio:.2} ×)</title></rect>\n\
                 <text x=\"{:.1}\" y=\"{:.1}\">{} ({ratio:.2} ×)</text>\n",
                (x1 - x0).max(1.0),
                bar - 3.0,
                esc(b),
                rate(*r),
                x1 + 4.0,
                y + bar - 5.0,
                rate(*r),
            );
            y += bar;
        }
        y += gap;
    }
    for (k, b) in backends.iter().enumerate() {
        let yy = y + 20.0 * k as f64;
        out += &format!(
            "<rect x=\"{left}\" y=\"{yy:.1}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n<text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
            COLORS[k % 8],
            left + 18.0,
            yy + 10.0,
            esc(b)
        );
    }
    out + "</svg>\n"
}
