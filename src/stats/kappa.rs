//! Cohen's κ of two raters' pass/fail verdicts on the same items (a judge and a human), with
//! the large-sample interval of Fleiss, Cohen & Everitt (1969): κ ± z·SE, the variance taken
//! under the alternative (as statsmodels' `cohens_kappa` computes it), clipped to [−1, 1].

use super::normal_quantile;

/// A 2×2 table of verdicts: rows the judge, columns the human.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Agreement {
    /// Judge pass, human pass.
    pub both_pass: u64,
    /// Judge pass, human fail: the judge is lenient.
    pub judge_only: u64,
    /// Judge fail, human pass: the judge is strict.
    pub human_only: u64,
    /// Judge fail, human fail.
    pub both_fail: u64,
}

/// What the table says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kappa {
    /// Share of items both passed, by the human: the base rate beside which κ is read.
    pub base_rate: f64,
    /// Share of items they agree on.
    pub agreement: f64,
    /// `None` when chance agreement is 1 (both raters gave one verdict to every item).
    pub kappa: Option<f64>,
    /// The two-sided interval at `confidence`, when κ is defined and one rater did not give
    /// every item one verdict (then κ is 0 and its large-sample variance degenerates:
    /// statsmodels prints 0, NaN or ±1e−8 by rounding; there is no interval).
    pub interval: Option<(f64, f64)>,
}

impl Agreement {
    /// Items in the table (saturating: a table read from a file may hold any count).
    pub fn n(&self) -> u64 {
        self.both_pass.saturating_add(self.judge_only).saturating_add(self.human_only).saturating_add(self.both_fail)
    }

    pub fn add(&mut self, judge: bool, human: bool) {
        *match (judge, human) {
            (true, true) => &mut self.both_pass,
            (true, false) => &mut self.judge_only,
            (false, true) => &mut self.human_only,
            (false, false) => &mut self.both_fail,
        } += 1;
    }

    /// κ and its interval at `confidence` (e.g. 0.95); `None` on no items.
    pub fn kappa(&self, confidence: f64) -> Option<Kappa> {
        let n = self.n();
        if n == 0 {
            return None;
        }
        let n = n as f64;
        let cell = [
            [self.both_pass as f64 / n, self.judge_only as f64 / n],
            [self.human_only as f64 / n, self.both_fail as f64 / n],
        ];
        let row = [cell[0][0] + cell[0][1], cell[1][0] + cell[1][1]];
        let col = [cell[0][0] + cell[1][0], cell[0][1] + cell[1][1]];
        let agreement = cell[0][0] + cell[1][1];
        let expected = row[0] * col[0] + row[1] * col[1];
        let base_rate = col[0];
        if 1.0 - expected < 1e-12 {
            return Some(Kappa { base_rate, agreement, kappa: None, interval: None });
        }
        let k = (agreement - expected) / (1.0 - expected);
        let a: f64 = (0..2).map(|i| cell[i][i] * (1.0 - (row[i] + col[i]) * (1.0 - k)).powi(2)).sum();
        let b: f64 =
            (1.0 - k).powi(2) * (cell[0][1] * (col[0] + row[1]).powi(2) + cell[1][0] * (col[1] + row[0]).powi(2));
        let c = (k - expected * (1.0 - k)).powi(2);
        let variance = ((a + b - c) / (1.0 - expected).powi(2) / n).max(0.0);
        let z = normal_quantile(1.0 - (1.0 - confidence) / 2.0);
        let half = z * variance.sqrt();
        let constant = row.iter().chain(&col).any(|share| *share == 0.0);
        Some(Kappa {
            base_rate,
            agreement,
            kappa: Some(k),
            interval: (!constant).then(|| ((k - half).max(-1.0), (k + half).min(1.0))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(t: [[u64; 2]; 2]) -> Agreement {
        Agreement { both_pass: t[0][0], judge_only: t[0][1], human_only: t[1][0], both_fail: t[1][1] }
    }

    #[test]
    fn matches_sklearn_and_statsmodels() {
        // tests/fixtures/stats/kappa.py: sklearn's κ, statsmodels' 95% interval.
        let cases = [
            ([[40, 5], [3, 12]], 0.6595744680851063, 0.44377576085441495, 0.8753731753157982),
            ([[20, 10], [10, 20]], 0.33333333333333337, 0.09477411417104559, 0.5718925524956209),
            ([[45, 2], [1, 2]], 0.5398773006134969, 0.0803957937274547, 0.9993588074995381),
            ([[10, 12], [15, 13]], -0.08000000000000007, -0.35429584415621773, 0.1942958441562178),
            ([[30, 0], [0, 20]], 1.0, 1.0, 1.0),
        ];
        for (t, k, lo, hi) in cases {
            let got = table(t).kappa(0.95).unwrap();
            let (l, h) = got.interval.unwrap();
            assert!((got.kappa.unwrap() - k).abs() < 1e-12, "{t:?}: κ {:?} ≠ {k}", got.kappa);
            assert!((l - lo).abs() < 1e-9 && (h - hi).abs() < 1e-9, "{t:?}: ({l}, {h}) ≠ ({lo}, {hi})");
        }
    }

    #[test]
    fn base_rate_and_agreement_are_the_humans_and_the_diagonal() {
        let k = table([[40, 5], [3, 12]]).kappa(0.95).unwrap();
        assert!((k.base_rate - 43.0 / 60.0).abs() < 1e-12);
        assert!((k.agreement - 52.0 / 60.0).abs() < 1e-12);
    }

    #[test]
    fn one_verdict_everywhere_has_no_kappa() {
        // 95% raw agreement that says nothing: the judge passes everything.
        let k = table([[19, 1], [0, 0]]).kappa(0.95).unwrap();
        assert_eq!(k.kappa.map(|k| k < 0.01), Some(true));
        // One rater constant: κ is 0 (sklearn), and no interval (statsmodels: 0, NaN or
        // ±4e−8 by rounding, tests/fixtures/stats/kappa.py), never a zero-width [0, 0].
        for t in [[[19, 1], [0, 0]], [[15, 5], [0, 0]], [[10, 0], [5, 0]], [[0, 0], [3, 17]]] {
            let k = table(t).kappa(0.95).unwrap();
            assert_eq!((k.kappa, k.interval), (Some(0.0), None), "{t:?}");
        }
        let k = table([[20, 0], [0, 0]]).kappa(0.95).unwrap();
        assert_eq!((k.kappa, k.interval), (None, None));
        assert!(Agreement::default().kappa(0.95).is_none());
    }
}
