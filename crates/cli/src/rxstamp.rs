//! Kernel receive timestamps on a TCP socket (Linux): the crate's only `unsafe` for sockets.
//!
//! [`enable`] turns on `SO_TIMESTAMPNS`: from then on the kernel stamps every received segment
//! (software stamp, `CLOCK_REALTIME`, taken when the packet reached the network stack) and
//! [`recv`] reads bytes with `recvmsg`, returning the `SCM_TIMESTAMPNS` control message of the
//! read — for TCP, the stamp of the last segment that read consumed. Everything else about the
//! connection (readiness, writes) stays tokio's.

use std::io;
use std::os::fd::RawFd;

/// Ask the kernel to stamp received data on `fd` (`SO_TIMESTAMPNS`).
pub fn enable(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: `fd` is an open socket owned by the caller for the call's duration; the option
    // value is a live `c_int` whose size we pass.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&raw const on).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Read into `buf` with `recvmsg`: the byte count and the read's kernel receive time as
/// nanoseconds since the Unix epoch (`CLOCK_REALTIME`), when the kernel sent one. A read of 0
/// bytes is the end of the stream. `WouldBlock` when nothing is ready (the socket is
/// non-blocking, as tokio's are).
pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<i64>)> {
    // Room for one or two control messages; u64s keep it aligned for `cmsghdr`.
    let mut control = [0u64; 16];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: `msghdr` is plain data; all-zero is a valid empty header, filled in below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&control) as _;
    // SAFETY: `msg` points at `iov` (which covers exactly `buf`) and at `control`, all of which
    // outlive the call; the kernel writes at most their stated lengths.
    let n = unsafe { libc::recvmsg(fd, &raw mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: `msg` was filled by a successful `recvmsg`; CMSG_FIRSTHDR/CMSG_NXTHDR walk only
    // within `msg_controllen` bytes of `control`, and each `SCM_TIMESTAMPNS` message carries a
    // `timespec` (read unaligned, as its data need not be aligned for it).
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&raw const msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                // `time_t` and `c_long` are 32 bits on some targets: widened, not converted.
                #[allow(clippy::useless_conversion)]
                let ns = i64::from(ts.tv_sec) * 1_000_000_000 + i64::from(ts.tv_nsec);
                stamp = Some(ns);
            }
            c = libc::CMSG_NXTHDR(&raw const msg, c);
        }
    }
    Ok((n as usize, stamp.filter(|&s| s > 0)))
}

/// An idle connection is still usable: open, with nothing waiting to be read (a peek that would
/// block). A closed one peeks 0 bytes; one the server wrote on unasked peeks data.
pub fn idle_and_open(fd: RawFd) -> bool {
    let mut byte = 0u8;
    // SAFETY: `fd` is an open socket owned by the caller; the kernel writes at most one byte
    // into `byte`, which outlives the call; MSG_PEEK consumes nothing.
    let n = unsafe { libc::recv(fd, (&raw mut byte).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
    n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
}
