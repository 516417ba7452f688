#include "chat/strftime.h"

#include "chat/render_error.h"

#include <cstdio>
#include <ctime>

namespace lorascope::chat {

namespace {

const char* const kDays[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
const char* const kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                               "July",    "August",   "September", "October", "November", "December"};

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int days_in_month(int y, int m) {
    static const int kDaysIn[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : kDaysIn[m - 1];
}

int day_of_year(const ChatClock& c) {  // 1-based
    int d = c.day;
    for (int m = 1; m < c.month; ++m) d += days_in_month(c.year, m);
    return d;
}

int weekday(const ChatClock& c) {  // 0 = Sunday (Sakamoto's method)
    static const int t[] = {0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4};
    int y = c.year - (c.month < 3 ? 1 : 0);
    return (y + y / 4 - y / 100 + y / 400 + t[c.month - 1] + c.day) % 7;
}

std::string num(int value, int width, char pad = '0') {
    char buf[32];
    std::snprintf(buf, sizeof buf, pad == '0' ? "%0*d" : "%*d", width, value);
    return buf;
}

std::string abbreviation(const char* name) { return std::string(name, 3); }

}  // namespace

std::string py_strftime(const std::string& format, const ChatClock& c) {
    if (c.month < 1 || c.month > 12 || c.day < 1 || c.day > days_in_month(c.year, c.month) || c.hour < 0 || c.hour > 23 ||
        c.minute < 0 || c.minute > 59 || c.second < 0 || c.second > 60 || c.year < 1 || c.year > 9999)
        fail_type("the clock's date or time is out of range");
    const int wday = weekday(c), yday = day_of_year(c);
    const int hour12 = c.hour % 12 == 0 ? 12 : c.hour % 12;
    std::string out;
    for (size_t i = 0; i < format.size(); ++i) {
        if (format[i] != '%') {
            out += format[i];
            continue;
        }
        if (++i >= format.size()) fail_unsupported("strftime format ending in a lone '%' is not supported");
        switch (format[i]) {
            case 'a': out += abbreviation(kDays[wday]); break;
            case 'A': out += kDays[wday]; break;
            case 'b':
            case 'h': out += abbreviation(kMonths[c.month - 1]); break;
            case 'B': out += kMonths[c.month - 1]; break;
            case 'c':
                out += abbreviation(kDays[wday]) + " " + abbreviation(kMonths[c.month - 1]) + " " + num(c.day, 2, ' ') + " " +
                       num(c.hour, 2) + ":" + num(c.minute, 2) + ":" + num(c.second, 2) + " " + std::to_string(c.year);
                break;
            case 'C': out += num(c.year / 100, 2); break;
            case 'd': out += num(c.day, 2); break;
            case 'D': out += num(c.month, 2) + "/" + num(c.day, 2) + "/" + num(c.year % 100, 2); break;
            case 'e': out += num(c.day, 2, ' '); break;
            case 'f': out += "000000"; break;  // the clock has whole seconds
            case 'F': out += std::to_string(c.year) + "-" + num(c.month, 2) + "-" + num(c.day, 2); break;
            case 'H': out += num(c.hour, 2); break;
            case 'I': out += num(hour12, 2); break;
            case 'j': out += num(yday, 3); break;
            case 'm': out += num(c.month, 2); break;
            case 'M': out += num(c.minute, 2); break;
            case 'n': out += '\n'; break;
            case 'p': out += c.hour < 12 ? "AM" : "PM"; break;
            case 'R': out += num(c.hour, 2) + ":" + num(c.minute, 2); break;
            case 'S': out += num(c.second, 2); break;
            case 't': out += '\t'; break;
            case 'T':
            case 'X': out += num(c.hour, 2) + ":" + num(c.minute, 2) + ":" + num(c.second, 2); break;
            case 'u': out += std::to_string(wday == 0 ? 7 : wday); break;
            case 'w': out += std::to_string(wday); break;
            case 'x': out += num(c.month, 2) + "/" + num(c.day, 2) + "/" + num(c.year % 100, 2); break;
            case 'y': out += num(c.year % 100, 2); break;
            case 'Y': out += std::to_string(c.year); break;
            case 'z':
            case 'Z': break;  // a naive datetime has no zone
            case '%': out += '%'; break;
            default: fail_unsupported(std::string("the strftime directive %") + format[i] + " is not supported");
        }
    }
    return out;
}

ChatClock local_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    ChatClock c;
    c.year = tm.tm_year + 1900;
    c.month = tm.tm_mon + 1;
    c.day = tm.tm_mday;
    c.hour = tm.tm_hour;
    c.minute = tm.tm_min;
    c.second = tm.tm_sec;
    return c;
}

}  // namespace lorascope::chat
