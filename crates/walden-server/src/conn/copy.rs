//! COPY FROM STDIN and COPY TO STDOUT (text, CSV and binary formats; the
//! binary layout is `copybin.rs`).

use super::*;
use walden_sql::CopyLoad;

/// Text and CSV data are handed to the session once this much has arrived
/// (or at CopyDone): rows are inserted batch by batch as the client sends
/// them, and the server holds at most a batch of input at a time.
const COPY_BATCH: usize = 256 * 1024;

impl Connection {
    /// COPY ... FROM STDIN: the client's CopyData goes to the session in
    /// batches as it arrives; CopyDone ends the statement. Sync and Flush
    /// are ignored meanwhile (clients pipeline a Sync after the Execute
    /// that starts the copy). An error (bad data, a constraint, CopyFail)
    /// undoes the whole COPY and is sent at once; the rest of the client's
    /// COPY messages are then ignored by the main loop, as PostgreSQL does.
    pub(super) async fn copy_in(
        &mut self,
        copy: &CopyIn,
        _extended: bool,
    ) -> IoResult<Result<(), PgError>> {
        let mut load = match self.guarded(|s| s.copy_in_start(copy)).and_then(|r| r) {
            Ok(l) => l,
            Err(e) => return Ok(Err(e.into())),
        };
        let (format, n) = if copy.format.binary {
            (1, copy.types.len())
        } else {
            (0, 0)
        };
        self.send(PgWireBackendMessage::CopyInResponse(CopyInResponse::new(
            format,
            n as i16,
            vec![format as i16; n],
        )))
        .await?;
        self.flush().await?;
        let mut binary = copy
            .format
            .binary
            .then(|| crate::copybin::Stream::new(&copy.types));
        let mut data = Vec::new();
        // Data arrived since the last batch went to the session.
        let mut fresh = false;
        let failure = loop {
            // What has arrived is inserted before waiting for more: rows go
            // in as the client sends them (and an error in them is reported
            // while it still sends), in batches of what came together.
            let next = match futures::FutureExt::now_or_never(self.socket.next()) {
                Some(m) => m,
                None if fresh => {
                    fresh = false;
                    if let Err(e) = self.feed_copy(&mut load, binary.as_mut(), &mut data, false) {
                        break e;
                    }
                    continue;
                }
                None => self.socket.next().await,
            };
            let last = match next {
                Some(Ok(PgWireFrontendMessage::CopyData(d))) => {
                    data.extend_from_slice(&d.data);
                    fresh = true;
                    if data.len() < COPY_BATCH {
                        continue;
                    }
                    false
                }
                Some(Ok(PgWireFrontendMessage::CopyDone(_))) => true,
                Some(Ok(PgWireFrontendMessage::CopyFail(f))) => {
                    break PgError::error(
                        sqlstate::QUERY_CANCELED,
                        format!("COPY from stdin failed: {}", f.message),
                    );
                }
                Some(Ok(PgWireFrontendMessage::Sync(_) | PgWireFrontendMessage::Flush(_))) => {
                    continue
                }
                Some(Ok(other)) => {
                    break PgError::error(
                        sqlstate::PROTOCOL_VIOLATION,
                        format!(
                            "unexpected message type 0x{:02X} during COPY from stdin",
                            message_byte(&other)
                        ),
                    );
                }
                Some(Err(e)) => {
                    let _ = self.guarded(|s| s.copy_in_abort(load));
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        e.to_string(),
                    ));
                }
                None => {
                    let _ = self.guarded(|s| s.copy_in_abort(load));
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
            };
            fresh = false;
            if let Err(e) = self.feed_copy(&mut load, binary.as_mut(), &mut data, last) {
                break e;
            }
            if last {
                return match self.guarded(|s| s.copy_in_finish(load)).and_then(|r| r) {
                    Ok(out) => {
                        self.notices(&out.notices).await?;
                        self.send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                            out.tag,
                        )))
                        .await?;
                        Ok(Ok(()))
                    }
                    Err(e) => Ok(Err(e.into())),
                };
            }
        };
        let _ = self.guarded(|s| s.copy_in_abort(load));
        Ok(Err(failure))
    }

    /// Hands the COPY data received so far to the session (all of it when
    /// `last`); what it cannot use yet (a row cut short) stays for later.
    fn feed_copy(
        &mut self,
        load: &mut CopyLoad,
        binary: Option<&mut crate::copybin::Stream<'_>>,
        data: &mut Vec<u8>,
        last: bool,
    ) -> Result<(), PgError> {
        let r = match binary {
            Some(stream) => {
                let mut rows = stream.take_rows(data, last).into_iter();
                self.guarded(|s| s.copy_in_values(load, &mut rows))
            }
            None => {
                let r = self.guarded(|s| s.copy_in_data(load, data, last));
                data.clear();
                r
            }
        };
        r.and_then(|r| r).map_err(PgError::from)
    }

    /// COPY ... TO STDOUT: CopyOutResponse, the header line if asked for,
    /// one CopyData per row (values in their text form, laid out by the SQL
    /// layer's COPY format), CopyDone, then CommandComplete `COPY n`.
    pub(super) async fn copy_out(
        &mut self,
        out: QueryOutput,
        copy: &CopyOut,
    ) -> IoResult<Result<(), PgError>> {
        let columns = out.columns.unwrap_or_default();
        let n = columns.len().min(i16::MAX as usize);
        let format = copy.format.binary as i8;
        self.send(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
            format,
            n as i16,
            vec![format as i16; n],
        )))
        .await?;
        if copy.format.binary {
            return self.copy_out_binary(out.rows, &columns, out.tag).await;
        }
        let mut line = Vec::new();
        if copy.format.header {
            let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
            copy.format.encode_header(&names, &mut line);
            self.copy_data(&line).await?;
        }
        let mut text = BytesMut::new();
        let mut ends = Vec::with_capacity(n);
        let zone = self.session.time_zone();
        for row in out.rows {
            // Each value's text form, as query results send it, end to end in
            // one buffer; `ends` marks where each ends (None for NULL).
            text.clear();
            ends.clear();
            {
                let _zone = walden_engine::types::zone::enter(&zone);
                for (i, v) in row.iter().enumerate() {
                    if v.is_null() {
                        ends.push(None);
                    } else {
                        let ty = columns.get(i).map_or(&DataType::Text, |c| &c.ty);
                        pgtypes::encode_text(v, ty, &mut text);
                        ends.push(Some(text.len()));
                    }
                }
            }
            let whole = String::from_utf8_lossy(&text);
            let mut start = 0;
            let fields: Vec<Option<&str>> = ends
                .iter()
                .map(|e| {
                    e.map(|end| {
                        let f = whole.get(start..end).unwrap_or("");
                        start = end;
                        f
                    })
                })
                .collect();
            line.clear();
            copy.format.encode_row(&fields, &copy.forced, &mut line);
            self.copy_data(&line).await?;
        }
        self.send(PgWireBackendMessage::CopyDone(CopyDone::new()))
            .await?;
        self.send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
            out.tag,
        )))
        .await?;
        Ok(Ok(()))
    }

    /// The rows of a binary COPY TO: the header travels with the first row
    /// and the trailer in a message of its own, as PostgreSQL sends them.
    async fn copy_out_binary(
        &mut self,
        rows: Vec<Vec<Value>>,
        columns: &[Column],
        tag: String,
    ) -> IoResult<Result<(), PgError>> {
        let types: Vec<DataType> = columns.iter().map(|c| c.ty.clone()).collect();
        let mut buf = BytesMut::new();
        crate::copybin::encode_header(&mut buf);
        for row in rows {
            if let Err(e) = crate::copybin::encode_row(&row, &types, &mut buf) {
                return Ok(Err(PgError::error(sqlstate::INTERNAL_ERROR, e)));
            }
            self.copy_data(&buf).await?;
            buf.clear();
        }
        crate::copybin::encode_trailer(&mut buf);
        self.copy_data(&buf).await?;
        self.send(PgWireBackendMessage::CopyDone(CopyDone::new()))
            .await?;
        self.send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
            tag,
        )))
        .await?;
        Ok(Ok(()))
    }

    /// Appends one CopyData message straight into the send buffer.
    pub(super) async fn copy_data(&mut self, data: &[u8]) -> IoResult {
        let buf: &mut BytesMut = self.socket.write_buffer_mut();
        buf.put_u8(b'd');
        buf.put_i32(data.len() as i32 + 4);
        buf.put_slice(data);
        if buf.len() >= SEND_BUFFER {
            self.flush().await?;
        }
        Ok(())
    }
}

fn message_byte(m: &PgWireFrontendMessage) -> u8 {
    use PgWireFrontendMessage as M;
    match m {
        M::Query(_) => b'Q',
        M::Parse(_) => b'P',
        M::Bind(_) => b'B',
        M::Describe(_) => b'D',
        M::Execute(_) => b'E',
        M::Close(_) => b'C',
        M::Terminate(_) => b'X',
        _ => b'?',
    }
}
