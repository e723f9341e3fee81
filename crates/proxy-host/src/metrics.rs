//! The host's metric store: every definition, value and histogram sample the guest reports,
//! readable back by the test, with the failure modes of hosts that refuse or stop serving
//! metric calls.

use std::collections::HashMap;
use std::sync::Mutex;

use proxy_wasm_host::abi::v0_2_1::types::{MetricType, Status};
use proxy_wasm_host::abi::v0_2_1::{Invocation, MetricId, SharedServices};

use crate::lock;

/// How the host answers metric calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricsMode {
    /// Define, record and increment all work.
    Working,
    /// Every metric call answers this status (APISIX: `UNIMPLEMENTED`).
    Refused(Status),
    /// Definitions work; record/increment answer `status` after `ok_calls` successful ones.
    FailAfter { ok_calls: u64, status: Status },
}

/// One metric as the host saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metric {
    pub name: String,
    pub kind: MetricType,
    /// Counter / gauge value (sum of increments; a record sets it).
    pub value: i64,
    /// Every value recorded into a histogram, in order.
    pub samples: Vec<u64>,
}

#[derive(Debug, Default)]
struct MetricInner {
    by_name: HashMap<Vec<u8>, u32>,
    metrics: Vec<Metric>,
    calls: u64,
}

/// A metric store for the guest that can be read back, with failure modes.
#[derive(Debug)]
pub struct MetricStore {
    inner: Mutex<MetricInner>,
    mode: MetricsMode,
}

impl MetricStore {
    pub fn new(mode: MetricsMode) -> MetricStore {
        MetricStore { inner: Mutex::new(MetricInner::default()), mode }
    }

    fn metric<T>(&self, name: &str, f: impl FnOnce(&Metric) -> T) -> Option<T> {
        let inner = lock(&self.inner);
        let id = *inner.by_name.get(name.as_bytes())?;
        inner.metrics.get(id as usize - 1).map(f)
    }

    /// A counter's or gauge's value; `None` when never defined.
    pub fn value(&self, name: &str) -> Option<i64> {
        self.metric(name, |m| m.value)
    }

    /// A counter's value, 0 when never defined or never incremented.
    pub fn counter(&self, name: &str) -> i64 {
        self.value(name).unwrap_or(0)
    }

    /// Every sample of a histogram (empty when never defined).
    pub fn samples(&self, name: &str) -> Vec<u64> {
        self.metric(name, |m| m.samples.clone()).unwrap_or_default()
    }

    pub fn names(&self) -> Vec<String> {
        lock(&self.inner).metrics.iter().map(|m| m.name.clone()).collect()
    }

    pub fn snapshot(&self) -> Vec<Metric> {
        lock(&self.inner).metrics.clone()
    }

    /// Drop every sample and zero every value (definitions stay).
    pub fn clear_values(&self) {
        for m in &mut lock(&self.inner).metrics {
            m.value = 0;
            m.samples = Vec::new();
        }
    }

    fn use_call(&self, inner: &mut MetricInner) -> Result<(), Status> {
        match self.mode {
            MetricsMode::Working => Ok(()),
            MetricsMode::Refused(s) => Err(s),
            MetricsMode::FailAfter { ok_calls, status } => {
                inner.calls += 1;
                if inner.calls > ok_calls { Err(status) } else { Ok(()) }
            }
        }
    }

    fn get_mut(inner: &mut MetricInner, metric: MetricId) -> Result<&mut Metric, Status> {
        inner.metrics.get_mut(metric.get() as usize - 1).ok_or(Status::NotFound)
    }
}

impl SharedServices for MetricStore {
    fn define_metric(
        &self,
        _: Invocation,
        _vm: &[u8],
        kind: MetricType,
        name: &[u8],
    ) -> Result<MetricId, Status> {
        if let MetricsMode::Refused(s) = self.mode {
            return Err(s);
        }
        let mut inner = lock(&self.inner);
        let id = match inner.by_name.get(name) {
            Some(&id) => id,
            None => {
                inner.metrics.push(Metric {
                    name: String::from_utf8_lossy(name).into_owned(),
                    kind,
                    value: 0,
                    samples: Vec::new(),
                });
                let id = u32::try_from(inner.metrics.len()).map_err(|_| Status::InternalFailure)?;
                inner.by_name.insert(name.to_vec(), id);
                id
            }
        };
        MetricId::try_from(id).map_err(|_| Status::InternalFailure)
    }

    fn record_metric(&self, _: Invocation, metric: MetricId, value: u64) -> Result<(), Status> {
        let mut inner = lock(&self.inner);
        self.use_call(&mut inner)?;
        let m = Self::get_mut(&mut inner, metric)?;
        match m.kind {
            MetricType::Histogram => m.samples.push(value),
            _ => m.value = i64::try_from(value).unwrap_or(i64::MAX),
        }
        Ok(())
    }

    fn increment_metric(&self, _: Invocation, metric: MetricId, delta: i64) -> Result<(), Status> {
        let mut inner = lock(&self.inner);
        self.use_call(&mut inner)?;
        let m = Self::get_mut(&mut inner, metric)?;
        match m.kind {
            MetricType::Counter if delta < 0 => Err(Status::BadArgument),
            MetricType::Histogram => Err(Status::BadArgument),
            _ => {
                m.value = m.value.saturating_add(delta);
                Ok(())
            }
        }
    }

    fn get_metric(&self, _: Invocation, metric: MetricId) -> Result<u64, Status> {
        let mut inner = lock(&self.inner);
        let m = Self::get_mut(&mut inner, metric)?;
        Ok(m.value.max(0).cast_unsigned())
    }
}
