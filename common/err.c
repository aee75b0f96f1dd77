/*
 * The error table: eb_strerror() and eb_err_name() expand EB_ERR_MAP, and
 * fall back to libuv for system codes. Pure functions, any thread.
 */
#include <stdarg.h>
#include <stdio.h>

#include <uv.h>

#include <ebnode/err.h>

const char *
eb_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
#define XX(name, val, msg) \
	case (val):        \
		return msg;
		EB_ERR_MAP(XX)
#undef XX
	default:
		break;
	}
	if (err < 0 && err > -20000) {
		return uv_strerror(
		    err); /* libuv returns "Unknown system error" */
	}
	return "unknown error";
}

const char *
eb_err_name(int err)
{
	switch (err) {
	case 0:
		return "OK";
#define XX(name, val, msg) \
	case (val):        \
		return "EB_" #name;
		EB_ERR_MAP(XX)
#undef XX
	default:
		break;
	}
	if (err < 0 && err > -20000) {
		return uv_err_name(err);
	}
	return "EB_EUNKNOWN";
}

int
eb_errf(eb_errbuf *e, int err, const char *fmt, ...)
{
	va_list ap;

	if (e != NULL) {
		va_start(ap, fmt);
		(void) vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return err;
}
