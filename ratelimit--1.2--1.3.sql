-- ratelimit 1.2 -> 1.3
\echo Use "ALTER EXTENSION ratelimit UPDATE TO '1.3'" to load this file. \quit
