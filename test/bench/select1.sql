-- the floor: a prepared statement that reads and writes nothing
SELECT 1;
