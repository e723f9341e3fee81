//! Stream state: one request as the host holds it while the guest runs (headers, bodies,
//! properties, the actions answered, a reset), the state lent for `proxy_on_tick`, what a
//! request leaves behind, and the unexpected statuses a host may answer instead.

use std::collections::BTreeMap;

use proxy_wasm_host::abi::v0_2_1::types::{Action, BufferType, MapType, Status, StreamType};
use proxy_wasm_host::abi::v0_2_1::{Access, ContextId, Invocation, LocalResponse, StreamState};
use proxy_wasm_host::{Buffer, HeaderMap, VecHeaderMap};

/// Unexpected statuses the host answers instead of serving a call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Odd {
    /// `proxy_get_header_map_value` on request headers.
    pub request_headers: Option<Status>,
    /// `proxy_get_header_map_value` on response headers.
    pub response_headers: Option<Status>,
    /// `proxy_get_buffer_bytes` on the response body.
    pub body: Option<Status>,
    /// `proxy_set_property`.
    pub set_property: Option<Status>,
    /// `proxy_close_stream` / `proxy_send_local_response`.
    pub reset: Option<Status>,
}

/// How a stream was reset by the filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResetBy {
    /// `proxy_close_stream(HTTP_RESPONSE)`: the downstream stream is reset and Envoy cancels
    /// the upstream request.
    CloseStream,
    /// `proxy_send_local_response` (status, details) before any response headers went out.
    LocalResponse(u32, String),
}

/// One request as the host holds it while the guest runs.
#[derive(Debug, Default)]
pub struct Exchange {
    pub(crate) request_headers: VecHeaderMap,
    pub(crate) response_headers: VecHeaderMap,
    pub(crate) request_body: Vec<u8>,
    pub(crate) body: Vec<u8>,
    /// Properties the guest set, by path (segments joined with `.`).
    pub properties: BTreeMap<String, String>,
    /// Every action the guest answered, in order.
    pub actions: Vec<Action>,
    pub reset: Option<ResetBy>,
    pub(crate) odd: Odd,
}

impl StreamState for Exchange {
    fn header_map(
        &mut self,
        _: Invocation,
        access: Access,
        map: MapType,
    ) -> Result<&mut dyn HeaderMap, Status> {
        match map {
            MapType::HttpRequestHeaders => match self.odd.request_headers {
                Some(s) if access == Access::Read => Err(s),
                _ => Ok(&mut self.request_headers),
            },
            MapType::HttpResponseHeaders => match self.odd.response_headers {
                Some(s) if access == Access::Read => Err(s),
                _ => Ok(&mut self.response_headers),
            },
            _ => Err(Status::NotFound),
        }
    }

    fn buffer(&mut self, _: Invocation, _: Access, buffer: BufferType) -> Result<&mut dyn Buffer, Status> {
        match buffer {
            BufferType::HttpResponseBody => match self.odd.body {
                Some(s) => Err(s),
                None => Ok(&mut self.body),
            },
            BufferType::HttpRequestBody => Ok(&mut self.request_body),
            _ => Err(Status::NotFound),
        }
    }

    fn property(&mut self, _: Invocation, path: &[&[u8]], out: &mut Vec<u8>) -> Result<(), Status> {
        let key = join(path);
        let v = self.properties.get(&key).ok_or(Status::NotFound)?;
        out.extend_from_slice(v.as_bytes());
        Ok(())
    }

    fn set_property(&mut self, _: Invocation, path: &[&[u8]], value: &[u8]) -> Result<(), Status> {
        if let Some(s) = self.odd.set_property {
            return Err(s);
        }
        self.properties.insert(join(path), String::from_utf8_lossy(value).into_owned());
        Ok(())
    }

    fn close_stream(&mut self, _: Invocation, stream: StreamType) -> Result<(), Status> {
        if let Some(s) = self.odd.reset {
            return Err(s);
        }
        if stream != StreamType::HttpResponse && stream != StreamType::HttpRequest {
            return Err(Status::BadArgument);
        }
        self.reset.get_or_insert(ResetBy::CloseStream);
        Ok(())
    }

    fn send_local_response(&mut self, _: Invocation, r: LocalResponse<'_>) -> Result<(), Status> {
        if let Some(s) = self.odd.reset {
            return Err(s);
        }
        self.reset.get_or_insert(ResetBy::LocalResponse(
            r.status_code,
            String::from_utf8_lossy(&r.status_code_details).into_owned(),
        ));
        Ok(())
    }
}

fn join(path: &[&[u8]]) -> String {
    path.iter().map(|s| String::from_utf8_lossy(s)).collect::<Vec<_>>().join(".")
}

/// The stream state lent for `proxy_on_tick`: it records resets by effective context.
#[derive(Debug, Default)]
pub(crate) struct TickState {
    pub(crate) resets: Vec<(ContextId, ResetBy)>,
    pub(crate) odd: Odd,
}

impl StreamState for TickState {
    fn close_stream(&mut self, call: Invocation, _: StreamType) -> Result<(), Status> {
        if let Some(s) = self.odd.reset {
            return Err(s);
        }
        self.resets.push((call.context, ResetBy::CloseStream));
        Ok(())
    }
    fn send_local_response(&mut self, call: Invocation, r: LocalResponse<'_>) -> Result<(), Status> {
        if let Some(s) = self.odd.reset {
            return Err(s);
        }
        let details = String::from_utf8_lossy(&r.status_code_details).into_owned();
        self.resets.push((call.context, ResetBy::LocalResponse(r.status_code, details)));
        Ok(())
    }
}

/// What a request left behind when its context was deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Finished {
    pub properties: BTreeMap<String, String>,
    pub actions: Vec<Action>,
    pub reset: Option<ResetBy>,
}

impl Finished {
    /// A property by its full path (e.g. `llm.ttft_us`).
    pub fn prop(&self, name: &str) -> Option<&str> {
        self.properties.get(name).map(String::as_str)
    }
}
